/**
 * SessionLedger: the FakeIrcServer's `onConnection` for tests where many Belay networks (each its own nick) connect to
 * one fake server, possibly from several Belay processes. For every session it registers the client, then counts it
 * live under its network (the nick the client first asked for) until the socket closes, and flags a second live
 * session of one network (`duplicates`). While a session lives, it feeds numbered private messages
 * (`<nick>-<n>` from `feeder`) every FEED_INTERVAL, each followed by a PING; the PONG says the line reached the
 * client before it (irc-framework answers PINGs in the order it reads lines), so the line is `acked`. It also notes
 * every PRIVMSG the client sends, by network.
 *
 * Concurrency rule: one fiber per session (forked by the server); the ledger's tables are plain maps and arrays
 * written in single steps and copied by readers.
 */
import { Clock, Duration, Effect } from "effect"
import type { FakeIrcConnection, FakeLine } from "./FakeIrcServer.js"

const FEED_INTERVAL = Duration.millis(400)

export interface SessionRecord {
  readonly network: string
  readonly openedAt: number
  closedAt: number | undefined
  quit: boolean
}

export interface FedLine {
  readonly network: string
  readonly text: string
  readonly session: SessionRecord
  /** When its PONG came back (ms, Clock), undefined when it never did. */
  ackedAt: number | undefined
}

export interface SessionLedger {
  readonly onConnection: (connection: FakeIrcConnection) => Effect.Effect<unknown, never>
  /** Sessions of the network live right now. */
  readonly live: (network: string) => number
  readonly liveNetworks: () => ReadonlySet<string>
  /** Each time a session registered while another of the same network was live. */
  readonly duplicates: () => ReadonlyArray<string>
  readonly sessions: () => ReadonlyArray<SessionRecord>
  readonly fed: () => ReadonlyArray<FedLine>
  /** Texts of the PRIVMSGs the clients sent, by network. */
  readonly received: (network: string) => ReadonlyArray<string>
}

export const makeSessionLedger = (): SessionLedger => {
  const liveCount = new Map<string, number>()
  const duplicates: Array<string> = []
  const sessions: Array<SessionRecord> = []
  const fed: Array<FedLine> = []
  const received = new Map<string, Array<string>>()
  const seq = new Map<string, number>()

  const onConnection = (connection: FakeIrcConnection) =>
    Effect.gen(function*() {
      const registration = yield* connection.register(undefined, undefined, { timeout: "20 seconds" })
      const network = registration.clientNick
      const now = yield* Clock.currentTimeMillis
      const count = (liveCount.get(network) ?? 0) + 1
      liveCount.set(network, count)
      if (count > 1) duplicates.push(`${network} at ${new Date(now).toISOString()}`)
      const session: SessionRecord = { network, openedAt: now, closedAt: undefined, quit: false }
      sessions.push(session)
      let list = received.get(network)
      if (list === undefined) received.set(network, (list = []))
      const sent = list
      const watch = (token: string) => (line: FakeLine) => {
        if (line.command === "PRIVMSG") sent.push(line.params[1] ?? "")
        if (line.command === "QUIT") session.quit = true
        return line.command === "PONG" && line.params.includes(token)
      }
      const feed = Effect.gen(function*() {
        for (;;) {
          yield* Effect.sleep(FEED_INTERVAL)
          const n = (seq.get(network) ?? 0) + 1
          seq.set(network, n)
          const line: FedLine = { network, text: `${network}-${n}`, session, ackedAt: undefined }
          fed.push(line)
          yield* connection.send(`:feeder!f@fake.test PRIVMSG ${registration.nick} :${line.text}`, `PING :ack${n}`)
          yield* connection.waitFor(watch(`ack${n}`), "10 seconds")
          line.ackedAt = yield* Clock.currentTimeMillis
        }
      })
      // The session ends when its socket closes, not when the feed next notices (up to FEED_INTERVAL later): a new
      // owner reconnecting within that time must not count as a second live session. A feed that fails (an ack not
      // answered) stops feeding and the session still lasts until the close.
      yield* Effect.raceFirst(
        feed.pipe(Effect.catchAll(() => Effect.never)),
        connection.waitClosed("1 hour").pipe(Effect.ignore)
      )
      session.closedAt = yield* Clock.currentTimeMillis
      liveCount.set(network, (liveCount.get(network) ?? 1) - 1)
    }).pipe(Effect.catchAll(() => Effect.void))

  return {
    onConnection,
    live: (network) => liveCount.get(network) ?? 0,
    liveNetworks: () => new Set([...liveCount].filter(([, n]) => n > 0).map(([network]) => network)),
    duplicates: () => [...duplicates],
    sessions: () => [...sessions],
    fed: () => [...fed],
    received: (network) => [...(received.get(network) ?? [])]
  }
}
