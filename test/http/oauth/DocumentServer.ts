/**
 * A local https server with its own certificate authority (test/support/certs.ts: CN=localhost, IP 127.0.0.1,
 * CA:TRUE), standing for the websites where MCP clients publish their Client ID Metadata Documents. Each path
 * answers what the test set for it; every request is counted, so a test can tell whether Belay fetched at all.
 * Scoped: closed afterwards.
 */
import * as Https from "node:https"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { FAKE_IRC_TLS_CERT, FAKE_IRC_TLS_KEY } from "../../support/certs.js"

export const DOCUMENT_CA = FAKE_IRC_TLS_CERT

export interface DocumentAnswer {
  readonly status?: number
  readonly headers?: Record<string, string>
  readonly body: string
}

export const startDocumentServer = Effect.gen(function*() {
  const answers = new Map<string, DocumentAnswer>()
  const hits = new Map<string, number>()
  const server = Https.createServer({ cert: FAKE_IRC_TLS_CERT, key: FAKE_IRC_TLS_KEY }, (req, res) => {
    const path = req.url ?? "/"
    hits.set(path, (hits.get(path) ?? 0) + 1)
    const answer = answers.get(path)
    if (answer === undefined) {
      res.writeHead(404).end("not found")
      return
    }
    res.writeHead(answer.status ?? 200, { "content-type": "application/json", ...answer.headers }).end(answer.body)
  })
  yield* Effect.acquireRelease(
    Effect.async<void>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.void))
    }),
    () => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )
  const port = (server.address() as AddressInfo).port
  const origin = `https://127.0.0.1:${port}`
  return {
    port,
    origin,
    /** Serves `document` (JSON-encoded unless a string) at `path`; returns the document's URL. */
    serve: (path: string, document: unknown, options: Omit<DocumentAnswer, "body"> = {}) => {
      answers.set(path, { ...options, body: typeof document === "string" ? document : JSON.stringify(document) })
      return `${origin}${path}`
    },
    hits: (path: string) => hits.get(path) ?? 0
  } as const
})

export type DocumentServer = Effect.Effect.Success<typeof startDocumentServer>
