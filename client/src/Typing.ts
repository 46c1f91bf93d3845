// Typing: who is typing in each buffer, from the server's `typing` frames (an upstream `+typing` TAGMSG, live only,
// never stored). As the IRCv3 typing spec asks (https://ircv3.net/specs/client-tags/typing): `active` shows the nick
// until 6 s pass without another `active`; `paused` and `done` take it away at once, and so does a message from that
// nick in that buffer. The buffers held are bounded: past MAX_TYPING nicks, the one that has waited longest is dropped.
//
// Concurrency rule: the browser's one event loop. One timer at a time wakes the view when the next nick expires.
import { fold } from "./Casemap.js"
import type { TypingState } from "./Protocol.js"

/** IRCv3 typing: a receiver drops `active` after 6 s without another. */
export const TYPING_EXPIRY_MS = 6_000
/** Nicks tracked across every buffer of the tab. */
export const MAX_TYPING = 200
/** The most nicks the line names; more are counted ("and 3 others"). */
const NAMED = 3

export interface TypingClock {
  readonly now: () => number
  /** Calls `f` once after `ms`. */
  readonly after: (ms: number, f: () => void) => void
}

const browserClock: TypingClock = {
  now: () => Date.now(),
  after: (ms, f) => void setTimeout(f, ms)
}

interface Entry {
  readonly nick: string
  readonly until: number
  readonly since: number
}

export class Typing {
  /** Buffer key → folded nick → entry. */
  private readonly byBuffer = new Map<string, Map<string, Entry>>()
  private size = 0
  /** When the pending wake-up fires; null when none is pending. */
  private wakeAt: number | null = null

  constructor(private readonly changed: () => void, private readonly clock: TypingClock = browserClock) {}

  /** A `typing` frame for buffer `key`. */
  onFrame(key: string, nick: string, state: TypingState): void {
    if (state !== "active") return this.spoke(key, nick)
    const now = this.clock.now()
    let nicks = this.byBuffer.get(key)
    if (nicks === undefined) this.byBuffer.set(key, (nicks = new Map()))
    const folded = fold(nick)
    const before = nicks.get(folded)
    if (before === undefined) {
      if (this.size >= MAX_TYPING) this.dropOldest()
      this.size++
    }
    nicks.set(folded, { nick, until: now + TYPING_EXPIRY_MS, since: before?.since ?? now })
    this.schedule(now + TYPING_EXPIRY_MS)
  }

  /** `nick` stopped typing in `key` (`paused`, `done`, or its message arrived). */
  spoke(key: string, nick: string): void {
    const nicks = this.byBuffer.get(key)
    if (nicks?.delete(fold(nick)) !== true) return
    this.size--
    if (nicks.size === 0) this.byBuffer.delete(key)
  }

  /** Who is typing in `key` now, first to start first. */
  who(key: string): ReadonlyArray<string> {
    const nicks = this.byBuffer.get(key)
    if (nicks === undefined) return []
    const now = this.clock.now()
    return [...nicks.values()].filter((e) => e.until > now).sort((a, b) => a.since - b.since).map((e) => e.nick)
  }

  private dropOldest() {
    let oldest: { key: string; folded: string; until: number } | null = null
    for (const [key, nicks] of this.byBuffer) {
      for (const [folded, e] of nicks) if (oldest === null || e.until < oldest.until) oldest = { key, folded, until: e.until }
    }
    if (oldest !== null) this.spoke(oldest.key, oldest.folded)
  }

  private prune(now: number) {
    for (const [key, nicks] of this.byBuffer) {
      for (const [folded, e] of nicks) {
        if (e.until > now) continue
        nicks.delete(folded)
        this.size--
      }
      if (nicks.size === 0) this.byBuffer.delete(key)
    }
  }

  /** Wakes the view at `at` (or at the pending wake-up, if sooner), then at each later expiry. */
  private schedule(at: number) {
    if (this.wakeAt !== null && this.wakeAt <= at) return
    this.wakeAt = at
    this.clock.after(Math.max(0, at - this.clock.now()), () => {
      if (this.wakeAt !== at) return
      this.wakeAt = null
      const now = this.clock.now()
      this.prune(now)
      let next: number | null = null
      for (const nicks of this.byBuffer.values()) for (const e of nicks.values()) if (next === null || e.until < next) next = e.until
      if (next !== null) this.schedule(next)
      this.changed()
    })
  }
}

/** "carol is typing…", "carol and dave are typing…", "carol, dave, erin and 2 others are typing…". */
export const typingText = (nicks: ReadonlyArray<string>): string => {
  if (nicks.length === 0) return ""
  if (nicks.length === 1) return `${nicks[0]} is typing…`
  if (nicks.length <= NAMED) return `${nicks.slice(0, -1).join(", ")} and ${nicks[nicks.length - 1]} are typing…`
  const others = nicks.length - NAMED
  return `${nicks.slice(0, NAMED).join(", ")} and ${others} ${others === 1 ? "other" : "others"} are typing…`
}
