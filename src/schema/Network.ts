// Network: a configured IRC network with its live connection state, as list_networks
// returns it (CONTRACT "MCP tool shapes"). Pure Schemas; no state.
import { Schema } from "effect"
import { NetworkId } from "./Ids.js"

/**
 * Connection state (interface "States": connected means the socket is actually up and
 * registered; a connection object waiting out its reconnect backoff is `backoff`, not
 * connected; after disconnect_network it is `offline`).
 */
export const NetworkState = Schema.Literal("connected", "connecting", "backoff", "offline").annotations({
  description:
    "connected: registered and usable; connecting: socket opening or registering; backoff: waiting to reconnect " +
    "after a failure; offline: not connected and not trying. Write tools need connected."
})
export type NetworkState = typeof NetworkState.Type

export const Network = Schema.Struct({
  id: NetworkId.annotations({ description: "Network id; pass it as networkId to the other tools." }),
  name: Schema.String.annotations({ description: "Name the member gave the network." }),
  host: Schema.String.annotations({ description: "IRC server host name." }),
  port: Schema.Number.pipe(Schema.int(), Schema.between(1, 65535)).annotations({ description: "IRC server port." }),
  tls: Schema.Boolean.annotations({ description: "true when the connection uses TLS." }),
  state: NetworkState,
  nick: Schema.NullOr(Schema.String).annotations({
    description: "The member's current nick on the network; null when not registered."
  })
}).annotations({ description: "One IRC network of the account." })
export type Network = typeof Network.Type
