/**
 * MultilineState: the shape of an IRCv3 draft/multiline batch one IRC client has open (Multiline.ts changes it;
 * Downstream.ts holds it), in a file of its own so neither imports the other (docs/architecture.md, "Beyond the rules").
 *
 * Concurrency rule: a plain record of one connection, read and changed only by that connection's session fiber.
 */
import type { MessageCommand, MultilinePart } from "../irc/TaggedMessages.js"

export interface OpenMultiline {
  /** The client's reference tag (`BATCH +<ref>`). */
  readonly ref: string
  readonly target: string
  /** The client-only tags of the opening BATCH: those of the whole message (multiline §"Message tags"). */
  readonly tags: ReadonlyMap<string, string>
  /** PRIVMSG or NOTICE, fixed by the first line; every line must use it. */
  command: MessageCommand | undefined
  readonly parts: Array<MultilinePart>
  /** The content's bytes as max-bytes counts them (a byte per line feed between lines). */
  bytes: number
  /** Refused already (FAIL sent): its remaining lines are dropped until its `BATCH -<ref>`. */
  failed: boolean
}
