/**
 * ChannelErrors: which server refusals belong in a channel's buffer, and how they read there. The network actor
 * stores the result as a message of kind `error` in that channel (the interface: set_topic and
 * set_channel_modes refusals "appear in the channel as an error line"). Pure functions; safe anywhere.
 *
 * Lines that answer a `get_mode_list` query never get here: `ModeListRequests.onLine` consumes them first and
 * answers the caller alone.
 *
 * Where the channel sits in each numeric (RFC 2812 §5.2 unless noted; the client's nick is always first):
 * - `<me> <channel> :text` — 403, 404, 405, 442, 467, 471, 473, 474, 475, 476, 477, 479, 482, 489 (InspIRCd/
 *   UnrealIRCd ERR_SECUREONLYCHAN), and 401/437 when their target is a channel (InspIRCd answers MODE and
 *   TOPIC on a missing channel with 401).
 * - `<me> <nick> <channel> :text` — 441, 443.
 * - `<me> <channel> <letter> :text` — 478 (modern.ircdocs.horse).
 * - `<me> <channel> <target> :text` — 470 (Solanum: forwarded to another channel).
 * - `<me> <target> <letter> <param> :text` — 696 (modern.ircdocs.horse ERR_INVALIDMODEPARAM), when the
 *   target is a channel.
 * - `<me> <letter> :text` — 472 names no channel: it is attributed to the channel of the last mode change
 *   the actor sent (`lastModeChannel`), else left to the server buffer.
 * Any other error numeric (400–599 and the later ones `isErrorNumeric` knows) with a channel among its middle
 * params goes to that channel too, so a server's own refusals (Solanum 480s, UnrealIRCd, InspIRCd modules) are
 * not lost in the server buffer.
 */
import type { IrcLine } from "../../irc/IrcLine.js"
import { defaultISupport, isChannel, type ISupport } from "../../irc/ISupport.js"
import { isErrorNumeric, Numeric } from "../../irc/Numerics.js"

export interface ChannelError {
  /** The channel as the server spelled it. */
  readonly channel: string
  /** Readable text for the `error` message: what failed, the server's own words, and the numeric. */
  readonly text: string
  /** The three-digit numeric, e.g. `"482"`. */
  readonly numeric: string
}

export interface ChannelErrorOptions {
  /** For CHANTYPES; defaults to RFC 1459's `#&`. */
  readonly isupport?: ISupport
  /** Channel of the most recent MODE change the actor sent, for a 472 (which names no channel). */
  readonly lastModeChannel?: string
}

interface Rule {
  /** Index of the channel in the params. */
  readonly at: number
  readonly summary: (params: ReadonlyArray<string>) => string
}

const fixed = (at: number, text: string): Rule => ({ at, summary: () => text })
const param = (params: ReadonlyArray<string>, i: number): string => params[i] ?? "?"

const RULES: ReadonlyMap<string, Rule> = new Map([
  [Numeric.ERR_NOSUCHNICK, fixed(1, "No such channel")],
  [Numeric.ERR_NOSUCHCHANNEL, fixed(1, "No such channel")],
  [Numeric.ERR_CANNOTSENDTOCHAN, fixed(1, "Cannot send to the channel")],
  [Numeric.ERR_TOOMANYCHANNELS, fixed(1, "Cannot join: too many channels joined")],
  [Numeric.ERR_UNAVAILRESOURCE, fixed(1, "Channel temporarily unavailable")],
  [Numeric.ERR_USERNOTINCHANNEL, { at: 2, summary: (p) => `${param(p, 1)} is not on the channel` }],
  [Numeric.ERR_NOTONCHANNEL, fixed(1, "You are not on the channel")],
  [Numeric.ERR_USERONCHANNEL, { at: 2, summary: (p) => `${param(p, 1)} is already on the channel` }],
  [Numeric.ERR_KEYSET, fixed(1, "The channel key is already set")],
  ["470", { at: 1, summary: (p) => `Forwarded to ${param(p, 2)}` }],
  [Numeric.ERR_CHANNELISFULL, fixed(1, "Cannot join: the channel is full (+l)")],
  [Numeric.ERR_INVITEONLYCHAN, fixed(1, "Cannot join: the channel is invite-only (+i)")],
  [Numeric.ERR_BANNEDFROMCHAN, fixed(1, "Cannot join: banned from the channel (+b)")],
  [Numeric.ERR_BADCHANNELKEY, fixed(1, "Cannot join: wrong or missing channel key (+k)")],
  [Numeric.ERR_BADCHANMASK, fixed(1, "Bad channel name")],
  // RFC 2812 ERR_NOCHANMODES; Solanum and InspIRCd send 477 for "+r: identify with services first".
  [Numeric.ERR_NOCHANMODES, fixed(1, "Refused: the channel needs a registered nick or has no modes")],
  [Numeric.ERR_BANLISTFULL, { at: 1, summary: (p) => `The ${param(p, 2)} list is full` }],
  ["479", fixed(1, "Illegal channel name")],
  [Numeric.ERR_CHANOPRIVSNEEDED, fixed(1, "Channel operator privileges needed")],
  ["489", fixed(1, "Cannot join: the channel requires a TLS connection")],
  [Numeric.ERR_INVALIDMODEPARAM, { at: 1, summary: (p) => `Invalid parameter for mode ${param(p, 2)}` }]
])

const withServerText = (summary: string, serverText: string, numeric: string): string =>
  serverText === "" || serverText === summary ? `${summary} (${numeric})` : `${summary}: ${serverText} (${numeric})`

/**
 * The channel error a line is, or undefined when it is not a refusal about a channel (the actor then handles
 * it as usual, e.g. stores it in the server buffer). The channel is returned even when we are not in it: a
 * refused JOIN (471, 473–475) belongs in that channel's buffer, where the caller of join_channel will look.
 */
export const channelErrorFor = (line: IrcLine, options: ChannelErrorOptions = {}): ChannelError | undefined => {
  const numeric = line.command
  if (!isErrorNumeric(numeric)) return undefined
  const isupport = options.isupport ?? defaultISupport
  const p = line.params
  // Fewer than three params means there is no middle param between our nick and the text.
  const serverText = p.length >= 3 ? (p[p.length - 1] ?? "") : ""

  if (numeric === Numeric.ERR_UNKNOWNMODE) {
    const channel = options.lastModeChannel
    if (channel === undefined || p.length < 3) return undefined
    return { channel, numeric, text: withServerText(`Unknown mode ${param(p, 1)}`, serverText, numeric) }
  }

  const rule = RULES.get(numeric)
  if (rule !== undefined) {
    const channel = p[rule.at]
    // The channel must be a middle param, not the trailing text.
    if (channel === undefined || rule.at >= p.length - 1 || !isChannel(isupport, channel)) return undefined
    return { channel, numeric, text: withServerText(rule.summary(p), serverText, numeric) }
  }

  const channel = p.slice(1, -1).find((x) => isChannel(isupport, x))
  if (channel === undefined) return undefined
  return { channel, numeric, text: withServerText("Refused by the server", serverText, numeric) }
}
