// ChannelMode: channel mode changes (the set_channel_modes argument) and channel lists
// (get_mode_list results), per docs/contract.md "MCP tool shapes"; the network actors take
// and answer them through their port in these same types. Pure Schemas; no state.
import { Schema } from "effect"
import { checkedString, IrcParam, IsoTime, showValue } from "./Ids.js"

export const ModeSign = Schema.Literal("+", "-").annotations({
  description: "+ sets the mode, - unsets it.",
  message: (issue) => ({ message: `must be "+" or "-", got ${showValue(issue.actual)}`, override: true })
})
export type ModeSign = typeof ModeSign.Type

/** A mode letter: one ASCII letter; whether the network knows it is checked against its ISUPPORT CHANMODES. */
export const ModeLetter = checkedString(
  (s) => (/^[A-Za-z]$/.test(s) ? undefined : `must be a single ASCII letter, got ${showValue(s)}`),
  { pattern: "^[A-Za-z]$" }
)

/** One change of a set_channel_modes call. `param` is an IRC middle parameter (mask, limit, key). */
export const ModeChange = Schema.Struct({
  sign: ModeSign,
  letter: ModeLetter.annotations({
    description: "Mode letter, e.g. o, v, b, k, l, m, t. It must be one the network advertises."
  }),
  param: Schema.optionalWith(
    IrcParam.annotations({
      description:
        "Argument, required exactly when the mode takes one: a nick for o/v, a mask for b/e/I/q, a number for +l, " +
        "a key for +k. For -k it may be omitted (the stored key or * is sent)."
    }),
    { exact: true }
  )
}).annotations({
  description: "One mode change.",
  message: (issue) => ({
    message: `must be an object {sign, letter, param?}, got ${showValue(issue.actual)}`,
    override: false
  })
})
export type ModeChange = typeof ModeChange.Type

/** The lists get_mode_list can fetch (interface: b bans, e ban exceptions, I invite exceptions, q quiets). */
export const ModeListLetter = Schema.Literal("b", "e", "I", "q").annotations({
  description: "b: bans, e: ban exceptions, I: invite exceptions, q: quiets (only on networks that have a quiet list).",
  message: (issue) => ({ message: `must be one of b, e, I, q, got ${showValue(issue.actual)}`, override: true })
})
export type ModeListLetter = typeof ModeListLetter.Type

/** One entry of a channel list (RPL_BANLIST 367 and kin: mask, then optional setter and time). */
export const ModeListEntry = Schema.Struct({
  mask: Schema.String.annotations({ description: "The listed mask, e.g. *!*@host.example." }),
  setBy: Schema.NullOr(Schema.String).annotations({
    description: "Who set the entry, as the server reported it; null when the server did not say."
  }),
  setAt: Schema.NullOr(IsoTime).annotations({
    description: "When the entry was set, ISO-8601 UTC; null when the server did not say."
  })
}).annotations({ description: "One channel list entry." })
export type ModeListEntry = typeof ModeListEntry.Type

/** A channel list as the server sent it: what get_mode_list answers besides `ok`. */
export const ModeList = Schema.Struct({
  channel: Schema.String.annotations({ description: "The channel." }),
  letter: ModeListLetter,
  entries: Schema.Array(ModeListEntry).annotations({ description: "The list, in the server's order." })
})
export type ModeList = typeof ModeList.Type
