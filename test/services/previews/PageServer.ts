/**
 * A local web server standing for the sites members link to (docs/decisions/previews.md): each path answers what the
 * test set for it — a body with headers, a redirect, a page sent slowly, an answer that never comes — over http, or
 * over https with the suite's own CA (test/support/certs.ts, trusted through EgressTrust). Every request is counted
 * per path, and the bytes each answer got out before its connection closed are kept, so a test can tell whether Belay
 * fetched at all, how often, and whether it cut a large answer short. Scoped: closed afterwards.
 */
import * as Http from "node:http"
import * as Https from "node:https"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { FAKE_IRC_TLS_CERT, FAKE_IRC_TLS_KEY } from "../../support/certs.js"

export const PAGE_CA = FAKE_IRC_TLS_CERT

export type PageAnswer =
  | { readonly kind: "body"; readonly status?: number; readonly headers?: Record<string, string>; readonly body: string | Buffer; readonly delayMs?: number }
  /** Sends `chunk` again and again, `total` bytes in all, as fast as the peer reads. */
  | { readonly kind: "stream"; readonly headers?: Record<string, string>; readonly chunk: string; readonly total: number }
  | { readonly kind: "redirect"; readonly status?: number; readonly location: string }
  /** Accepts the request and never answers. */
  | { readonly kind: "hang" }

export const startPageServer = (options: { readonly tls?: boolean } = {}) =>
  Effect.gen(function*() {
    const answers = new Map<string, PageAnswer>()
    const hits = new Map<string, number>()
    const sent = new Map<string, number>()
    const handler = (req: Http.IncomingMessage, res: Http.ServerResponse) => {
      const path = req.url ?? "/"
      hits.set(path, (hits.get(path) ?? 0) + 1)
      const answer = answers.get(path)
      if (answer === undefined) {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found")
        return
      }
      switch (answer.kind) {
        case "body": {
          const send = () =>
            res.writeHead(answer.status ?? 200, { "content-type": "text/html; charset=utf-8", ...answer.headers }).end(answer.body)
          if (answer.delayMs === undefined) send()
          else setTimeout(send, answer.delayMs)
          return
        }
        case "redirect":
          res.writeHead(answer.status ?? 302, { location: answer.location }).end()
          return
        case "hang":
          return
        case "stream": {
          res.writeHead(200, { "content-type": "text/html; charset=utf-8", ...answer.headers })
          let written = 0
          const pump = () => {
            while (written < answer.total) {
              written += answer.chunk.length
              sent.set(path, written)
              if (!res.write(answer.chunk)) return void res.once("drain", pump)
            }
            res.end()
          }
          res.on("close", () => sent.set(path, Math.min(written, answer.total)))
          pump()
          return
        }
      }
    }
    const server = options.tls === true
      ? Https.createServer({ cert: FAKE_IRC_TLS_CERT, key: FAKE_IRC_TLS_KEY }, handler)
      : Http.createServer(handler)
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const port = (server.address() as AddressInfo).port
    const origin = `${options.tls === true ? "https" : "http"}://127.0.0.1:${port}`
    return {
      port,
      origin,
      /** Answers `answer` at `path`; returns the URL. */
      serve: (path: string, answer: PageAnswer) => {
        answers.set(path, answer)
        return `${origin}${path}`
      },
      hits: (path: string) => hits.get(path) ?? 0,
      /** Bytes of a `stream` answer written before its connection closed. */
      sent: (path: string) => sent.get(path) ?? 0
    } as const
  })

export type PageServer = Effect.Effect.Success<ReturnType<typeof startPageServer>>

/** A 1 × 1 PNG (a real one: signature, IHDR, IDAT, IEND). */
export const TINY_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64"
)

/** An HTML page with Open Graph tags. */
export const ogPage = (fields: { readonly title: string; readonly description?: string; readonly image?: string }) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>ignored</title>
<meta property="og:title" content="${fields.title}">
${fields.description === undefined ? "" : `<meta property="og:description" content="${fields.description}">`}
${fields.image === undefined ? "" : `<meta property="og:image" content="${fields.image}">`}
</head><body><p>text</p></body></html>`
