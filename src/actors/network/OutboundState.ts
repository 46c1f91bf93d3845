/**
 * OutboundState: the shape of a connection's outgoing side — its token bucket and the lines waiting — as the Session
 * holds it (ActorState.ts). Outbound.ts owns every change to it; this file only names it, so that the state and the
 * code that paces it do not import each other. Types only.
 */
import type { Effect } from "effect"
import type * as TokenBucket from "./TokenBucket.js"

/** One line waiting to be written, and what to do once it is. */
export interface QueuedLine {
  readonly line: string
  readonly options: SendOptions | undefined
}

export interface SendOptions {
  /** Runs when the line is written (never, if the connection ends first). */
  readonly sent?: Effect.Effect<void>
  /**
   * The line may carry plaintext (a message not sealed, a raw line): checked again against the end-to-end keys when
   * it is written, and dropped if its target got a key while it waited (docs/decisions.md "`send_raw` cannot leak
   * plaintext into an encrypted target").
   */
  readonly plaintext?: boolean
}

/** The outgoing side of one connection: its bucket and the lines waiting, oldest first. */
export interface Outbound {
  bucket: TokenBucket.TokenBucket
  readonly queue: Array<QueuedLine>
}
