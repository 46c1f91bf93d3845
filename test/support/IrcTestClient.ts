/**
 * IrcTestClient: a scripted IRC client for the listener's loopback tests — a real TCP socket to the listener, the lines
 * it receives queued in order, and waits bounded in real time (the ambient Clock may be TestClock), like
 * FakeIrcServer's connections. Self-contained: it parses only what the tests look at (tags, source, command, params).
 *
 * Concurrency rule: one consumer of `next`/`until` at a time per client; `send` from any fiber.
 */
import * as Net from "node:net"
import { Clock, Duration, Effect, Queue } from "effect"

const liveClock = Clock.make()

export interface ClientLine {
  readonly raw: string
  readonly tags: Readonly<Record<string, string>>
  readonly source: string | undefined
  readonly command: string
  readonly params: ReadonlyArray<string>
}

export const parseClientLine = (raw: string): ClientLine => {
  let rest = raw
  const tags: Record<string, string> = {}
  if (rest.startsWith("@")) {
    const end = rest.indexOf(" ")
    for (const item of rest.slice(1, end).split(";")) {
      const eq = item.indexOf("=")
      tags[eq === -1 ? item : item.slice(0, eq)] = eq === -1 ? "" : item.slice(eq + 1)
    }
    rest = rest.slice(end + 1)
  }
  let source: string | undefined
  if (rest.startsWith(":")) {
    const end = rest.indexOf(" ")
    source = rest.slice(1, end)
    rest = rest.slice(end + 1)
  }
  const trailing = rest.indexOf(" :")
  const head = trailing === -1 ? rest : rest.slice(0, trailing)
  const words = head.split(" ").filter((w) => w !== "")
  const params = words.slice(1)
  if (trailing !== -1) params.push(rest.slice(trailing + 2))
  return { raw, tags, source, command: (words[0] ?? "").toUpperCase(), params }
}

export type Matcher = string | RegExp | ((line: ClientLine) => boolean)

const matches = (m: Matcher, line: ClientLine) =>
  typeof m === "string" ? line.command === m : m instanceof RegExp ? m.test(line.raw) : m(line)

export const connectClient = (port: number) =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<ClientLine | "closed">()
    const socket = yield* Effect.async<Net.Socket, Error>((resume) => {
      const s = Net.connect({ host: "127.0.0.1", port }, () => resume(Effect.succeed(s)))
      s.once("error", (e) => resume(Effect.fail(e)))
    }).pipe(Effect.orDie)
    let pending = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => {
      pending += chunk
      for (;;) {
        const lf = pending.indexOf("\n")
        if (lf === -1) break
        const raw = pending.slice(0, lf).replace(/\r$/, "")
        pending = pending.slice(lf + 1)
        if (raw !== "") lines.unsafeOffer(parseClientLine(raw))
      }
    })
    socket.on("close", () => lines.unsafeOffer("closed"))
    socket.on("error", () => {})
    yield* Effect.addFinalizer(() => Effect.sync(() => socket.destroy()))
    const seen: Array<ClientLine> = []

    const take = (timeout: Duration.DurationInput) =>
      Queue.take(lines).pipe(
        Effect.timeoutFail({ duration: timeout, onTimeout: () => new Error(`no line within ${Duration.format(Duration.decode(timeout))}; seen:\n${seen.slice(-20).map((l) => l.raw).join("\n")}`) }),
        Effect.withClock(liveClock)
      )

    /** Lines until one matches (it included); fails on close or after `timeout`. */
    const until = (m: Matcher, timeout: Duration.DurationInput = "5 seconds") =>
      Effect.gen(function*() {
        const got: Array<ClientLine> = []
        const deadline = Date.now() + Duration.toMillis(Duration.decode(timeout))
        for (;;) {
          const line = yield* take(Math.max(1, deadline - Date.now()))
          if (line === "closed") return yield* Effect.fail(new Error(`closed before a match; seen:\n${seen.slice(-20).map((l) => l.raw).join("\n")}`))
          seen.push(line)
          got.push(line)
          if (matches(m, line)) return got
        }
      })

    return {
      socket,
      send: (...out: ReadonlyArray<string>) => Effect.sync(() => void socket.write(out.map((l) => `${l}\r\n`).join(""))),
      until,
      /** The matching line itself. */
      next: (m: Matcher, timeout?: Duration.DurationInput) => Effect.map(until(m, timeout), (got) => got[got.length - 1]!),
      /** Waits for the server to close the connection; the lines before it. */
      closed: (timeout: Duration.DurationInput = "5 seconds") =>
        Effect.gen(function*() {
          const got: Array<ClientLine> = []
          for (;;) {
            const line = yield* take(timeout)
            if (line === "closed") return got
            seen.push(line)
            got.push(line)
          }
        }),
      /** Lines already received and not consumed, without waiting. */
      drain: Effect.map(Queue.takeAll(lines), (chunk) => [...chunk].filter((l): l is ClientLine => l !== "closed"))
    }
  })

export type IrcTestClient = Effect.Effect.Success<ReturnType<typeof connectClient>>

/** SASL PLAIN's payload for `user` and `password` (authzid empty). */
export const saslPlain = (user: string, password: string) => Buffer.from(`\u0000${user}\u0000${password}`).toString("base64")
