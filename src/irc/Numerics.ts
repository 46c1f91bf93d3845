/**
 * Numerics: the numeric replies the bouncer reacts to, by name. Constants only; safe everywhere.
 *
 * Names and meanings from RFC 1459 §6 and RFC 2812 §5, modern.ircdocs.horse "Numerics" for later ones
 * (RPL_ISUPPORT, RPL_TOPICWHOTIME, 728/729 quiet lists), IRCv3 monitor (730-734) and sasl-3.1 (900-908).
 * Where servers disagree on a number's name the comment says what Belay relies on.
 */

export const Numeric = {
  // Registration (RFC 2812 §5.1). 001 means registered; 005 may repeat.
  RPL_WELCOME: "001",
  RPL_YOURHOST: "002",
  RPL_CREATED: "003",
  RPL_MYINFO: "004",
  RPL_ISUPPORT: "005",

  RPL_UMODEIS: "221",

  // Away (RFC 2812 §5.1): 301 answers a PRIVMSG or WHOIS to an away user; 305/306 confirm our own AWAY.
  RPL_AWAY: "301",
  RPL_UNAWAY: "305",
  RPL_NOWAWAY: "306",

  // WHOIS / WHOWAS / WHO.
  RPL_WHOISUSER: "311",
  RPL_WHOISSERVER: "312",
  RPL_WHOISOPERATOR: "313",
  RPL_WHOWASUSER: "314",
  RPL_ENDOFWHO: "315",
  /** Obsolete (RFC 1459 reserved it); some servers still send it inside WHOIS. */
  RPL_WHOISCHANOP: "316",
  RPL_WHOISIDLE: "317",
  RPL_ENDOFWHOIS: "318",
  RPL_WHOISCHANNELS: "319",
  RPL_WHOISACCOUNT: "330",
  RPL_WHOREPLY: "352",
  RPL_ENDOFWHOWAS: "369",

  // Channel state.
  RPL_CHANNELMODEIS: "324",
  RPL_CREATIONTIME: "329",
  RPL_NOTOPIC: "331",
  RPL_TOPIC: "332",
  /** `<client> <channel> <setter> <unix time>`; not in the RFCs, sent by every current server. */
  RPL_TOPICWHOTIME: "333",
  RPL_NAMREPLY: "353",
  RPL_ENDOFNAMES: "366",

  // Mode lists: `<client> <channel> <mask> [<setter> <time>]`, then the end numeric.
  RPL_INVITELIST: "346",
  RPL_ENDOFINVITELIST: "347",
  RPL_EXCEPTLIST: "348",
  RPL_ENDOFEXCEPTLIST: "349",
  RPL_BANLIST: "367",
  RPL_ENDOFBANLIST: "368",
  /** Solanum/Charybdis quiet list: `<client> <channel> q <mask> [<setter> <time>]` (note the mode letter). */
  RPL_QUIETLIST: "728",
  RPL_ENDOFQUIETLIST: "729",

  // MOTD: 376 or 422 ends registration's burst.
  RPL_MOTD: "372",
  RPL_MOTDSTART: "375",
  RPL_ENDOFMOTD: "376",
  /** Our displayed host changed (cloak); it sizes the relayed prefix (TextSplit.prefixAllowance). */
  RPL_VISIBLEHOST: "396",

  // Errors (RFC 2812 §5.2).
  ERR_NOSUCHNICK: "401",
  ERR_NOSUCHSERVER: "402",
  ERR_NOSUCHCHANNEL: "403",
  ERR_CANNOTSENDTOCHAN: "404",
  ERR_TOOMANYCHANNELS: "405",
  ERR_NOTEXTTOSEND: "412",
  ERR_UNKNOWNCOMMAND: "421",
  ERR_NOMOTD: "422",
  ERR_NONICKNAMEGIVEN: "431",
  ERR_ERRONEUSNICKNAME: "432",
  ERR_NICKNAMEINUSE: "433",
  ERR_NICKCOLLISION: "436",
  ERR_UNAVAILRESOURCE: "437",
  ERR_USERNOTINCHANNEL: "441",
  ERR_NOTONCHANNEL: "442",
  ERR_USERONCHANNEL: "443",
  ERR_NOTREGISTERED: "451",
  ERR_NEEDMOREPARAMS: "461",
  ERR_ALREADYREGISTERED: "462",
  /** Wrong server password: permanent, stop retrying (soju `upstream.go`). */
  ERR_PASSWDMISMATCH: "464",
  /** Banned from the server (K-line). soju retries it. */
  ERR_YOUREBANNEDCREEP: "465",
  /** The channel key is already set. */
  ERR_KEYSET: "467",
  ERR_CHANNELISFULL: "471",
  ERR_UNKNOWNMODE: "472",
  ERR_INVITEONLYCHAN: "473",
  ERR_BANNEDFROMCHAN: "474",
  ERR_BADCHANNELKEY: "475",
  ERR_BADCHANMASK: "476",
  /** RFC 2812 ERR_NOCHANMODES; Solanum/InspIRCd use 477 for "you need a registered nick" (ERR_NEEDREGGEDNICK). */
  ERR_NOCHANMODES: "477",
  /** A list mode's list is full (MAXLIST). */
  ERR_BANLISTFULL: "478",
  ERR_CHANOPRIVSNEEDED: "482",
  ERR_UMODEUNKNOWNFLAG: "501",
  ERR_USERSDONTMATCH: "502",
  /** modern.ircdocs.horse: a mode parameter was refused (bad limit, mask…). */
  ERR_INVALIDMODEPARAM: "696",

  // MONITOR (IRCv3 monitor).
  RPL_MONONLINE: "730",
  RPL_MONOFFLINE: "731",
  RPL_MONLIST: "732",
  RPL_ENDOFMONLIST: "733",
  ERR_MONLISTFULL: "734",

  // SASL (IRCv3 sasl-3.1).
  RPL_LOGGEDIN: "900",
  RPL_LOGGEDOUT: "901",
  ERR_NICKLOCKED: "902",
  RPL_SASLSUCCESS: "903",
  ERR_SASLFAIL: "904",
  ERR_SASLTOOLONG: "905",
  ERR_SASLABORTED: "906",
  ERR_SASLALREADY: "907",
  RPL_SASLMECHS: "908"
} as const

export type NumericName = keyof typeof Numeric
export type NumericCode = (typeof Numeric)[NumericName]

const names: ReadonlyMap<string, NumericName> = new Map(
  Object.entries(Numeric).map(([name, code]) => [code, name as NumericName])
)

/** The name Belay knows a numeric by (`"482"` → `"ERR_CHANOPRIVSNEEDED"`), for logs. */
export const numericName = (code: string): NumericName | undefined => names.get(code)

/** True for a three-digit command (`"001"`), false for words (`"PRIVMSG"`). */
export const isNumeric = (command: string): boolean => /^[0-9]{3}$/.test(command)

// Errors outside 400-599: modern.ircdocs.horse and the IRCv3 specs above.
const ERRORS_OUTSIDE_RANGE: ReadonlySet<string> = new Set([
  Numeric.ERR_INVALIDMODEPARAM,
  "723", // ERR_NOPRIVS
  Numeric.ERR_MONLISTFULL,
  Numeric.ERR_NICKLOCKED,
  Numeric.ERR_SASLFAIL,
  Numeric.ERR_SASLTOOLONG,
  Numeric.ERR_SASLABORTED,
  Numeric.ERR_SASLALREADY
])

/** RFC 2812 §5.2: error replies are 400-599; plus the later error numerics listed above. */
export const isErrorNumeric = (code: string): boolean => {
  if (!isNumeric(code)) return false
  const n = Number(code)
  return (n >= 400 && n <= 599) || ERRORS_OUTSIDE_RANGE.has(code)
}
