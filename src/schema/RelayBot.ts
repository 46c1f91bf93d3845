// RelayBot: the relay bot mark of a nick on a network (interface "Relay bot mark"), as
// set_relay_bot returns it. Pure Schemas; no state.
import { Schema } from "effect"
import { NetworkId } from "./Ids.js"

export const RelayBotMark = Schema.Struct({
  networkId: NetworkId.annotations({ description: "Network of the bot." }),
  nick: Schema.String.annotations({ description: "The bot's nick, in the stored (canonical) casing." }),
  marked: Schema.Boolean.annotations({
    description: "true when messages from this nick are attributed to the speaker inside its envelope."
  }),
  pattern: Schema.NullOr(Schema.String).annotations({
    description:
      "Envelope template with {source}, {nick} and {message}; null when the default envelope forms are used."
  })
}).annotations({ description: "A relay bot mark." })
export type RelayBotMark = typeof RelayBotMark.Type
