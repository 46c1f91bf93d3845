/**
 * ChannelWitness: the other person in a few channels of a real IRC server (ngircd), who floods them and keeps, for
 * the cluster system tests, the one order the server imposes: every line it receives, numbered by its position in the
 * receive log and stamped with the time it arrived.
 *
 * Floods go in rounds: one PRIVMSG per channel, then `PING :r<round>`. A server handles one client's commands in
 * order, so the round's PONG is sent after its PRIVMSGs were relayed to the channels' members. Together with the
 * JOIN and QUIT/PART of a member as relayed to the witness, this says which rounds the server relayed to which session
 * of a member (`reached`), without guessing from clocks (RFC 2812 3.7.2 and 3.7.3 for PING/PONG).
 *
 * Concurrency rule: socket callbacks only append to the log; the flood runs on one fiber; readers copy the log.
 */
import { Effect, type Scope } from "effect"
import { loopbackSocket } from "./Ngircd.js"

export interface Seen {
  readonly at: number
  readonly line: string
}

/** One round of the flood: its texts by channel, the log length when it was written, and where its PONG landed. */
export interface Round {
  readonly n: number
  readonly texts: ReadonlyMap<string, string>
  readonly after: number
  readonly sentAt: number
  pong?: number
  pongAt?: number
}

/** A member (by key) in a channel from its JOIN to its QUIT/PART (positions in the receive log; `to` absent: still in). */
export interface Presence {
  readonly member: string
  readonly channel: string
  readonly from: number
  readonly fromAt: number
  readonly to?: number
  readonly toAt?: number
}

export interface ChannelWitness {
  readonly nick: string
  readonly send: (line: string) => Effect.Effect<void>
  readonly log: () => ReadonlyArray<Seen>
  /** Waits (polling the log from position `from`) for a line matching `match`; fails after `boundMs`. */
  readonly waitFor: (what: string, match: (line: string) => boolean, boundMs: number, from?: number) => Effect.Effect<Seen, Error>
  /** Floods `rounds` rounds, one every `everyMs`, until done or interrupted. */
  readonly flood: (rounds: number, everyMs: number, text: (round: number, channel: string) => string) => Effect.Effect<void>
  readonly rounds: () => ReadonlyArray<Round>
  /** The presences of the members `memberOf` recognizes (a nick to a member key, or undefined for others). */
  readonly presences: (memberOf: (nick: string) => string | undefined) => ReadonlyArray<Presence>
}

const PONG = /^:\S+ PONG \S+ :?r(\d+)$/
const MEMBERSHIP = /^:([^!\s]+)!\S+ (JOIN|PART|QUIT|NICK)(?: :?(\S*))?/

/**
 * Whether `round`'s line in `channel` was relayed to the member during `presence`: the member's JOIN had reached the
 * witness before the round was written, and the round's PONG reached it before the member's QUIT/PART.
 */
export const reached = (round: Round, presence: Presence) =>
  round.pong !== undefined && presence.from < round.after && (presence.to === undefined || round.pong < presence.to)

/** A registered client `nick` in `channels` on 127.0.0.1:`port`, disconnected with the scope. */
export const channelWitness = (
  port: number,
  nick: string,
  channels: ReadonlyArray<string>
): Effect.Effect<ChannelWitness, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const log: Array<Seen> = []
    const rounds: Array<Round> = []
    const socket = yield* loopbackSocket(port)
    socket.on("error", () => {})
    let buffer = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => {
      buffer += chunk
      const parts = buffer.split("\r\n")
      buffer = parts.pop() ?? ""
      for (const line of parts) {
        const at = Date.now()
        if (line.startsWith("PING ")) socket.write(`PONG ${line.slice(5)}\r\n`)
        const pong = PONG.exec(line)
        if (pong !== null) {
          const round = rounds[Number(pong[1])]
          if (round !== undefined) {
            round.pong = log.length
            round.pongAt = at
          }
        }
        log.push({ at, line })
      }
    })
    const send = (line: string) => Effect.sync(() => void socket.write(line + "\r\n"))
    const waitFor = (what: string, match: (line: string) => boolean, boundMs: number, from = 0) =>
      Effect.tryPromise({
        try: async () => {
          const deadline = Date.now() + boundMs
          let i = from
          for (;;) {
            for (; i < log.length; i++) if (match(log[i]!.line)) return log[i]!
            if (Date.now() > deadline) throw new Error(`witness ${nick}: ${what}: not within ${boundMs} ms`)
            await new Promise((r) => setTimeout(r, 50))
          }
        },
        catch: (e) => e as Error
      })
    yield* send(`NICK ${nick}`)
    yield* send(`USER ${nick} 0 * :Witness`)
    yield* waitFor("registered", (l) => / 001 /.test(l), 30_000)
    for (const channel of channels) {
      yield* send(`JOIN ${channel}`)
      yield* waitFor(`joined ${channel}`, (l) => l.startsWith(`:${nick}!`) && l.includes(`JOIN`) && l.endsWith(channel), 30_000)
    }

    const flood = (count: number, everyMs: number, text: (round: number, channel: string) => string) =>
      Effect.gen(function*() {
        for (let n = 0; n < count; n++) {
          const texts = new Map(channels.map((c) => [c, text(n, c)]))
          rounds.push({ n, texts, after: log.length, sentAt: Date.now() })
          socket.write([...texts].map(([c, t]) => `PRIVMSG ${c} :${t}\r\n`).join("") + `PING :r${n}\r\n`)
          yield* Effect.sleep(everyMs)
        }
      })

    // Open presences are keyed by the nick in use (a NICK moves them), so a session that quits late under an old
    // nick never closes its successor's presence.
    const presences = (memberOf: (nick: string) => string | undefined) => {
      const done: Array<Presence> = []
      const open = new Map<string, Presence>()
      log.forEach(({ at, line }, position) => {
        const m = MEMBERSHIP.exec(line)
        if (m === null) return
        const [, who, command, param] = m as unknown as [string, string, string, string | undefined]
        const close = (key: string) => {
          const p = open.get(key)
          if (p === undefined) return
          open.delete(key)
          done.push({ ...p, to: position, toAt: at })
        }
        if (command === "NICK") {
          for (const channel of channels) {
            const p = open.get(`${who} ${channel}`)
            if (p === undefined) continue
            open.delete(`${who} ${channel}`)
            open.set(`${param} ${channel}`, p)
          }
          return
        }
        const member = memberOf(who)
        if (member === undefined) return
        if (command === "JOIN") {
          const key = `${who} ${param}`
          if (!open.has(key)) open.set(key, { member, channel: param!, from: position, fromAt: at })
        } else if (command === "PART") {
          close(`${who} ${param}`)
        } else {
          for (const channel of channels) close(`${who} ${channel}`)
        }
      })
      return [...done, ...open.values()].sort((a, b) => a.from - b.from)
    }

    return {
      nick,
      send,
      log: () => [...log],
      waitFor,
      flood,
      rounds: () => rounds.map((r) => ({ ...r })),
      presences
    }
  })
