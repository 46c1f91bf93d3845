/**
 * Sends many raw requests to one server over a small pool of keep-alive connections, bodies as bytes (so invalid UTF-8
 * reaches the server as sent), and hands every answer to a checker. Requests go out `concurrency` at a time; a
 * transport failure (the server cutting a connection, no answer) is an outcome like any other, for the checker to judge.
 */
import * as Http from "node:http"

export interface RawRequest {
  /** POST unless given. */
  readonly method?: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
}

export type RawOutcome =
  | { readonly _tag: "Answer"; readonly status: number; readonly headers: Http.IncomingHttpHeaders; readonly body: Buffer }
  | { readonly _tag: "Transport"; readonly message: string }

type Attempt = RawOutcome | { readonly _tag: "Stale" }

const once = (agent: Http.Agent, base: URL, request: RawRequest): Promise<Attempt> =>
  new Promise((resolve) => {
    const req = Http.request({
      agent,
      host: base.hostname,
      port: base.port,
      method: request.method ?? "POST",
      path: request.path,
      headers: { ...request.headers, "content-length": String(request.body.length) }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ _tag: "Answer", status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on("error", (e) => resolve({ _tag: "Transport", message: e.message }))
    })
    req.on("error", (e) =>
      resolve(
        req.reusedSocket && (e as NodeJS.ErrnoException).code === "ECONNRESET"
          ? { _tag: "Stale" }
          : { _tag: "Transport", message: `${(e as NodeJS.ErrnoException).code ?? ""} ${e.message}` }
      ))
    req.end(request.body)
  })

/**
 * One request; a keep-alive connection the server closed while it sat in the pool (a race every HTTP client knows)
 * is retried once on a fresh connection. Any other failure is reported.
 */
export const sendRaw = async (agent: Http.Agent, base: URL, request: RawRequest): Promise<RawOutcome> => {
  for (let attempt = 0; attempt < 3; attempt++) {
    const outcome = await once(agent, base, request)
    if (outcome._tag !== "Stale") return outcome
  }
  return { _tag: "Transport", message: "three pooled connections in a row were closed under the request" }
}

/** Sends every request, `concurrency` at a time, and gives each outcome to `check` with its request. */
export const storm = async <R extends RawRequest>(
  baseUrl: string,
  requests: ReadonlyArray<R>,
  concurrency: number,
  check: (request: R, outcome: RawOutcome) => void
): Promise<void> => {
  const base = new URL(baseUrl)
  // Shorter than the server's keep-alive bound, so the client lets an idle connection go before the server does.
  const agent = new Http.Agent({ keepAlive: true, maxSockets: concurrency, timeout: 3_000 })
  let next = 0
  const worker = async () => {
    while (next < requests.length) {
      const request = requests[next++]!
      check(request, await sendRaw(agent, base, request))
    }
  }
  try {
    await Promise.all(Array.from({ length: concurrency }, worker))
  } finally {
    agent.destroy()
  }
}
