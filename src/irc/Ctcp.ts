/**
 * Ctcp: Client-To-Client Protocol framing inside PRIVMSG/NOTICE text (`\x01ACTION waves\x01`).
 * Pure functions; safe to call from any fiber.
 *
 * Follows draft-oakley-irc-ctcp-02 §2: a CTCP message is `\x01<command>[ <params>]\x01`; the final `\x01` "MAY be
 * omitted" by broken clients and must be tolerated. The command is case-insensitive and reported upper-cased.
 * Low-level quoting (the old `\x10` scheme) is obsolete and not applied, like every current client.
 */
import { utf8ByteLength } from "./IrcLine.js"

export const CTCP_DELIMITER = "\x01"

export interface Ctcp {
  /** Upper-cased, e.g. `ACTION`, `VERSION`. */
  readonly command: string
  /** Everything after the first space, `""` when there is none (`\x01VERSION\x01`). */
  readonly params: string
}

/** Decodes a CTCP message, or `undefined` when `text` is ordinary text (or an empty `\x01\x01`). */
export const decodeCtcp = (text: string): Ctcp | undefined => {
  if (!text.startsWith(CTCP_DELIMITER)) return undefined
  const body = text.endsWith(CTCP_DELIMITER) && text.length > 1 ? text.slice(1, -1) : text.slice(1)
  const space = body.indexOf(" ")
  const command = (space === -1 ? body : body.slice(0, space)).toUpperCase()
  if (command === "") return undefined
  return { command, params: space === -1 ? "" : body.slice(space + 1) }
}

/** Frames a CTCP message; `params` omitted or `undefined` gives `\x01COMMAND\x01`. */
export const encodeCtcp = (command: string, params?: string): string =>
  CTCP_DELIMITER + command.toUpperCase() + (params !== undefined ? ` ${params}` : "") + CTCP_DELIMITER

/** `\x01ACTION <text>\x01`: what send_action puts in a PRIVMSG. */
export const encodeAction = (text: string): string => encodeCtcp("ACTION", text)

/** The action text of a PRIVMSG, or `undefined` when it is not an ACTION. */
export const decodeAction = (text: string): string | undefined => {
  const ctcp = decodeCtcp(text)
  return ctcp?.command === "ACTION" ? ctcp.params : undefined
}

/** Bytes that framing adds around params: `\x01` + command + space + `\x01` (9 for ACTION). */
export const ctcpOverhead = (command: string): number => utf8ByteLength(command) + 3
