/**
 * MultilineState: the shape of an IRCv3 draft/multiline batch one IRC client has open (Multiline.ts changes it;
 * Downstream.ts holds it), in a file of its own so neither imports the other (docs/architecture.md, "Beyond the rules").
 *
 * Concurrency rule: a plain record of one connection, read and changed only by that connection's session fiber.
 */
import type { MessageCommand, MultilinePart } from "../irc/TaggedMessages.js"
import type { StoredRow } from "../services/history/MessageRow.js"

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
  /**
   * The client's label on the opening BATCH (labeled-response): the batch's answer carries it — its first FAIL, else
   * its echo (MultilineEcho.ts) or `ACK` at its end. Undefined once answered, or when it had none.
   */
  label: string | undefined
  /** Sent, and its echo is awaited (echo-message): the echo answers the label. */
  echoes: boolean
}

/** A multiline message this client sent with echo-message, whose stored lines MultilineEcho.ts gathers. */
export interface PendingMultilineEcho {
  readonly target: string
  readonly targetFolded: string
  readonly command: MessageCommand
  /** The message as the client composed it: the echo gives it back so. */
  readonly parts: ReadonlyArray<MultilinePart>
  readonly tags: ReadonlyMap<string, string>
  readonly label: string | undefined
  /** The part the next stored line of the message is (blank parts may have been dropped upstream). */
  next: number
  /** The message's first stored line: its msgid and time are the batch's (multiline §"Message tags"). */
  first: StoredRow | undefined
}
