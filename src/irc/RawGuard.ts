/**
 * Reads a raw IRC line the way a server would, only far enough to learn whom a message in
 * it goes to. send_raw uses it to refuse plaintext to a target with end-to-end encryption
 * (interface.md, send_raw: error `e2e-channel-use-send-message`). Pure code, no state.
 *
 * Tokenising follows RFC 1459 §2.3.1 as servers apply it, plus IRCv3 message tags: optional
 * `@tags`, optional `:prefix` (servers ignore a client's), the command in any letter case,
 * then parameters separated by one or more spaces, the last one after ` :` (which may also
 * be the first). Servers skip leading spaces and end a line at CR or LF, so a "raw line"
 * that holds CR or LF is read as several lines and every one of them is checked.
 *
 * PRIVMSG and NOTICE both carry text to a channel, so both would leak plaintext into an
 * encrypted one, and the FiSH tools encrypt both (fish.py decrypts NOTICEs, FiSH-irssi has
 * /notice+, FiSHLiM NOTICE+). The interface names PRIVMSG (CTCP ACTION is a PRIVMSG too);
 * messageTargetsOfRawLine also covers NOTICE, and is the one send_raw should use.
 * Other commands (TOPIC, PART reasons, ...) are not messages to the channel and pass.
 */

/** The commands that deliver text to their targets. */
export type MessageCommand = "PRIVMSG" | "NOTICE"

/**
 * Targets of every PRIVMSG or NOTICE in `raw`, in order, as typed: comma-separated first
 * parameter, empty entries dropped. Leading characters found in `statusmsg` (the network's
 * ISUPPORT STATUSMSG, e.g. "@+") are removed, so `@#chan` comes back as `#chan`; compare the
 * result with the network's CASEMAPPING. Empty when `raw` holds no such command.
 */
export const messageTargetsOfRawLine = (raw: string, statusmsg = ""): ReadonlyArray<string> =>
  targetsOf(raw, statusmsg, (command) => command === "PRIVMSG" || command === "NOTICE")

/** As messageTargetsOfRawLine, for PRIVMSG alone (the case interface.md names). */
export const privmsgTargetsOfRawLine = (raw: string, statusmsg = ""): ReadonlyArray<string> =>
  targetsOf(raw, statusmsg, (command) => command === "PRIVMSG")

const targetsOf = (
  raw: string,
  statusmsg: string,
  guarded: (command: string) => boolean
): ReadonlyArray<string> => {
  const targets: Array<string> = []
  for (const line of raw.split(/\r\n|\r|\n/)) {
    const message = readMessage(line)
    if (message === undefined || !guarded(message.command)) continue
    for (const target of message.targets) {
      const bare = withoutStatusmsg(target, statusmsg)
      if (bare.length > 0) targets.push(bare)
    }
  }
  return targets
}

interface Message {
  readonly command: string
  readonly targets: ReadonlyArray<string>
}

const readMessage = (line: string): Message | undefined => {
  let at = skipSpaces(line, 0)
  if (line[at] === "@") at = skipSpaces(line, wordEnd(line, at))
  if (line[at] === ":") at = skipSpaces(line, wordEnd(line, at))
  const commandEnd = wordEnd(line, at)
  if (commandEnd === at) return undefined
  // Servers fold command names in ASCII only.
  const command = line.slice(at, commandEnd).replace(/[a-z]/g, (c) => c.toUpperCase())
  at = skipSpaces(line, commandEnd)
  if (at >= line.length) return { command, targets: [] }
  // A first parameter given as trailing (`PRIVMSG :#a`) is still the target list; a space in
  // it makes no sense to a server, so split there too rather than let a target slip by.
  const list = line[at] === ":" ? line.slice(at + 1).split(" ") : [line.slice(at, wordEnd(line, at))]
  return { command, targets: list.flatMap((part) => part.split(",")).filter((t) => t.length > 0) }
}

const skipSpaces = (line: string, from: number): number => {
  let at = from
  while (line[at] === " ") at++
  return at
}

const wordEnd = (line: string, from: number): number => {
  const space = line.indexOf(" ", from)
  return space === -1 ? line.length : space
}

const withoutStatusmsg = (target: string, statusmsg: string): string => {
  let at = 0
  while (at < target.length - 1 && statusmsg.includes(target.charAt(at))) at++
  return target.slice(at)
}
