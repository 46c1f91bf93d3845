// Network: a configured IRC network with its live connection state, as list_networks
// returns it (docs/decisions.md "MCP tool shapes"), and the status the network actors
// publish through their port (src/actors/NetworkApi.ts), which carries the same live
// fields. Pure Schemas; no state.
import { Schema } from "effect"
import { IsoTime, NetworkId } from "./Ids.js"

/**
 * Connection state (the interface, "States": connected means the socket is actually up and
 * registered; a connection object waiting out its reconnect backoff is `backoff`, not
 * connected; after disconnect_network it is `offline`).
 */
export const NetworkState = Schema.Literal("connected", "connecting", "backoff", "offline").annotations({
  description:
    "connected: registered and usable; connecting: socket opening or registering; backoff: waiting to reconnect " +
    "after a failure; offline: not connected and not trying. Write tools need connected."
})
export type NetworkState = typeof NetworkState.Type

/** The live fields of a network: its actor publishes them, list_networks shows them unchanged. */
export const NetworkConnection = Schema.Struct({
  state: NetworkState,
  nick: Schema.NullOr(Schema.String).annotations({
    description: "The member's current nick on the network; null when not registered."
  }),
  lastError: Schema.NullOr(Schema.String).annotations({
    description: "Why the last connection dropped or was refused; null when there was none."
  }),
  nextRetryAt: Schema.NullOr(IsoTime).annotations({
    description: "While in backoff: when the next connection attempt starts, ISO-8601 UTC; otherwise null."
  })
})
export type NetworkConnection = typeof NetworkConnection.Type

export const Network = Schema.Struct({
  id: NetworkId.annotations({ description: "Network id; pass it as networkId to the other tools." }),
  name: Schema.String.annotations({ description: "Name the member gave the network." }),
  host: Schema.String.annotations({ description: "IRC server host name." }),
  port: Schema.Number.pipe(Schema.int(), Schema.between(1, 65535)).annotations({ description: "IRC server port." }),
  tls: Schema.Boolean.annotations({ description: "true when the connection uses TLS." }),
  ...NetworkConnection.fields
}).annotations({ description: "One IRC network of the account." })
export type Network = typeof Network.Type

/** The ISUPPORT CASEMAPPING values Belay folds names with (src/irc/CaseMapping.ts). */
export const CaseMappingName = Schema.Literal("ascii", "rfc1459", "strict-rfc1459", "rfc7613")

/**
 * A network's status as its actor publishes it: the live fields of list_networks, plus what
 * other services need to read the network's names (its CASEMAPPING and CHANTYPES, RFC 1459
 * §2.2 defaults until ISUPPORT says otherwise).
 */
export const NetworkStatus = Schema.Struct({
  networkId: Schema.Number,
  ...NetworkConnection.fields,
  caseMapping: CaseMappingName,
  /** CHANTYPES of the network ("#&" by default). */
  channelTypes: Schema.String
})
export type NetworkStatus = typeof NetworkStatus.Type
