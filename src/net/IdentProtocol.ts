/**
 * IdentProtocol: the lines of the Identification Protocol (RFC 1413) as Belay's ident server reads and writes them —
 * a query `<port-on-server> , <port-on-client>` (our side's port first, the asking server's second) and its one-line
 * answer. Pure; safe from any fiber.
 */

/** A query's two ports: `local`, our end of the connection asked about; `remote`, the asking server's end. */
export interface IdentQuery {
  readonly local: number
  readonly remote: number
}

/**
 * The longest query line read, terminator excluded. Two ports and a comma take 13 characters; RFC 1413 §6 allows
 * white space around each, and a line longer than this is not a query but a client sending whatever it likes.
 */
export const IDENT_MAX_LINE = 64

const QUERY = /^[ \t]*(\d{1,5})[ \t]*,[ \t]*(\d{1,5})[ \t]*$/

const isPort = (n: number) => n >= 1 && n <= 65535

/**
 * One query line (its CR LF or LF already removed), or `invalid`: not two decimal ports separated by a comma, or a
 * port outside 1–65535 (RFC 1413 §6: answered `INVALID-PORT`).
 */
export const parseIdentQuery = (line: string): IdentQuery | "invalid" => {
  if (line.length > IDENT_MAX_LINE) return "invalid"
  const match = QUERY.exec(line)
  if (match === null) return "invalid"
  const local = Number(match[1])
  const remote = Number(match[2])
  return isPort(local) && isPort(remote) ? { local, remote } : "invalid"
}

/** The answer naming `ident` as the user of the connection (operating system `UNIX`, RFC 1413 §6). */
export const identAnswer = (query: IdentQuery, ident: string): string =>
  `${query.local} , ${query.remote} : USERID : UNIX : ${ident}\r\n`

/**
 * The error answers Belay gives: `NO-USER` when no connection of a member matches (the RFC allows `HIDDEN-USER` or
 * `NO-USER` here; NO-USER says nothing about what runs on the node), `INVALID-PORT` for a line that is not a query.
 */
export const identError = (query: IdentQuery | "invalid", error: "NO-USER" | "INVALID-PORT"): string =>
  query === "invalid" ? `0 , 0 : ERROR : ${error}\r\n` : `${query.local} , ${query.remote} : ERROR : ${error}\r\n`
