// Member: one member of a joined channel, as list_members returns it (docs/contract.md
// "MCP tool shapes") and the network actors answer it through their port. Pure Schemas; no state.
import { Schema } from "effect"

export const Member = Schema.Struct({
  nick: Schema.String.annotations({ description: "The member's nick." }),
  prefix: Schema.String.annotations({
    description: "Status prefix symbols, highest first, e.g. \"@\", \"+\", \"@+\"; \"\" for none."
  }),
  modes: Schema.Array(Schema.String).annotations({
    description: "The channel status mode letters matching prefix, highest first, e.g. [\"o\", \"v\"]."
  }),
  away: Schema.Boolean.annotations({ description: "true when the member is known to be away." })
}).annotations({ description: "One channel member." })
export type Member = typeof Member.Type
