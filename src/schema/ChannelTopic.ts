// ChannelTopic: a joined channel's topic as get_topic returns it (docs/contract.md "MCP
// tool shapes"), and as the network actors answer it through their port. Pure Schemas; no state.
import { Schema } from "effect"
import { IsoTime } from "./Ids.js"

export const ChannelTopic = Schema.Struct({
  channel: Schema.String.annotations({ description: "The channel." }),
  topic: Schema.String.annotations({ description: "The topic; empty string when none is set." }),
  setBy: Schema.NullOr(Schema.String).annotations({ description: "Who set the topic; null when unknown." }),
  setAt: Schema.NullOr(IsoTime).annotations({
    description: "When the topic was set, ISO-8601 UTC; null when unknown."
  })
})
export type ChannelTopic = typeof ChannelTopic.Type
