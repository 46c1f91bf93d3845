// Network: a configured IRC network with its live connection state, as list_networks
// returns it (docs/contract.md "MCP tool shapes"), and the status the network actors
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

// ---------------------------------------------------------------------------------------------
// A network's settings as the member gives them: `belay network add` (src/schema/Admin.ts) and the web client's
// `/api/networks` (src/http/networks/NetworkRoutes.ts) decode with these same Schemas, so both accept exactly the
// same values.

/** The member's name for the network, unique on the account. */
export const NetworkName = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))
/** A host name, IPv4 or IPv6 address (brackets allowed): nothing that could carry a path, a user or a space. */
export const NetworkHost = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9.:\-[\]]{1,253}$/))
export const NetworkPort = Schema.Number.pipe(Schema.int(), Schema.between(1, 65535))
/** RFC 2812 §2.3.1 roughly: no space, no list or mask character, not starting like a channel or a prefix. */
export const NetworkNick = Schema.String.pipe(Schema.pattern(/^[^\s,*?!@#&:$][^\s,*?!@]{0,63}$/))
/** The USER name: one word without `@`. */
export const NetworkUsername = Schema.String.pipe(Schema.pattern(/^[^\s@]{1,64}$/))
/** The real name (USER's trailing parameter): one line. */
export const NetworkRealname = Schema.String.pipe(Schema.pattern(/^[^\r\n\0]{1,256}$/))
/** The server password (PASS): one word. */
export const ServerPassword = Schema.String.pipe(Schema.pattern(/^[^\r\n\0 ]{1,512}$/))
/** A channel joined on every connection: one JOIN parameter (no space, comma, BEL or NUL). */
export const AutojoinChannel = Schema.String.pipe(Schema.pattern(/^[^\s,\x07\0]{1,200}$/))
