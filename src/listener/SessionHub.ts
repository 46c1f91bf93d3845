/**
 * SessionHub: the IRC client sessions of this process, by network and by account, and what they all share — the
 * count of unregistered connections per address (at most UNREGISTERED_PER_ADDRESS), the routing of live events to
 * the sessions they concern, and auto-away: when the last client of a network leaves, the member is marked away
 * upstream, and back when a client returns, unless the member chose an away message itself (set_away, or AWAY from a
 * client), which is left alone (docs/contract.md "The IRC client listener").
 *
 * Concurrency rule: the maps are changed and read in synchronous steps only (JavaScript runs one fiber step at a
 * time); `route` never waits, it offers each event to the sessions' inboxes. Auto-away runs as a short fiber of the
 * hub's scope per attach or detach, so a session never waits for the upstream to leave.
 */
import { Effect, Option } from "effect"
import type { NetworkControlService } from "../actors/NetworkApi.js"
import type { FeedLine, FeedStatus } from "../services/events/NetworkFeed.js"
import type { NetworkChange, Networks } from "../services/networks/Networks.js"
import type { StoredRow } from "../services/history/MessageRow.js"
import type { CredentialRevoked } from "../services/identity/CredentialRevocations.js"
import type { ReadMarker } from "../services/history/ReadMarkers.js"
import type { BufferPreferenceChange } from "../services/preferences/BufferPreferences.js"
import type { LabelledReply } from "./UpstreamLabels.js"

export const UNREGISTERED_PER_ADDRESS = 10

/** The away message Belay sets when the last IRC client of a network leaves (and clears when one returns). */
export const AUTO_AWAY_MESSAGE = "Auto away: no client attached"

/** What a session is asked to check of its credential (CredentialCheck.ts acts on it). */
export type CredentialEvent =
  | { readonly _tag: "Revoked"; readonly revoked: CredentialRevoked }
  /** The account's status changed (pause, resume) or it was recovered. */
  | { readonly _tag: "AccountChanged" }
  /** Everything, from the database (after a lost LISTEN, and once after registration). */
  | { readonly _tag: "Recheck" }

/** A live event for one session. */
export type HubEvent =
  | { readonly _tag: "Stored"; readonly rows: ReadonlyArray<StoredRow> }
  | { readonly _tag: "Line"; readonly line: FeedLine; readonly reply?: LabelledReply }
  | { readonly _tag: "Marker"; readonly marker: ReadMarker }
  | { readonly _tag: "Preference"; readonly change: BufferPreferenceChange }
  | { readonly _tag: "Status"; readonly status: FeedStatus }
  | { readonly _tag: "NetworkChange"; readonly change: NetworkChange; readonly accountId: number }
  | { readonly _tag: "Credential"; readonly event: CredentialEvent }

/** What the hub knows of a registered session. */
export interface SessionHandle {
  /** The connection's id (Downstream.id). */
  readonly id: number
  readonly accountId: number
  /** null for a control connection. */
  readonly networkId: number | null
  /** Hands the session an event; never blocks. */
  readonly offer: (event: HubEvent) => void
  /**
   * Whether it counts as the member being present for auto-away: not after `AWAY *` under IRCv3 pre-away (a client
   * connected without the member, to fetch history or push). Changed only through `setPresent`.
   */
  present: boolean
}

export const makeSessionHub = (deps: {
  readonly control: NetworkControlService
  readonly networks: Networks
  /** Runs an auto-away change in the hub's scope. */
  readonly fork: (effect: Effect.Effect<void>) => void
  /** A network gained its first bound session here (true) or lost its last (false): NetworkFeed.bind. */
  readonly bound?: (networkId: number, first: boolean) => void
  /** How many upstream lines had reached the listener so far (LiveOrder.arrived); 0 when not told. */
  readonly arrived?: () => number
}) => {
  /**
   * Per bound session, how many upstream lines had reached the listener when it bound: it gets only the later ones.
   * The earlier ones are in the state its welcome is drawn from (the actor publishes a line once it has read it), even
   * when LiveOrder still holds them for the rows they wait for.
   */
  const boundAt = new WeakMap<SessionHandle, number>()
  const unregistered = new Map<string, number>()
  const byNetwork = new Map<number, Set<SessionHandle>>()
  const byAccount = new Map<number, Set<SessionHandle>>()
  /** The sessions of each network that count as present (auto-away follows this count, not the bound sessions'). */
  const presentByNetwork = new Map<number, Set<SessionHandle>>()

  const add = <K>(map: Map<K, Set<SessionHandle>>, key: K, s: SessionHandle) => {
    let set = map.get(key)
    if (set === undefined) map.set(key, (set = new Set()))
    set.add(s)
    return set.size
  }
  const remove = <K>(map: Map<K, Set<SessionHandle>>, key: K, s: SessionHandle) => {
    const set = map.get(key)
    set?.delete(s)
    if (set?.size === 0) map.delete(key)
    return set?.size ?? 0
  }

  /** Sets or clears auto-away, never touching an away message the member chose. */
  const autoAway = (networkId: number, away: boolean) =>
    Effect.gen(function*() {
      const config = yield* deps.networks.config(networkId)
      if (Option.isNone(config)) return
      const current = config.value.awayMessage
      if (away && current === null) yield* Effect.ignore(deps.control.away(networkId, Option.some(AUTO_AWAY_MESSAGE)))
      if (!away && current === AUTO_AWAY_MESSAGE) yield* Effect.ignore(deps.control.away(networkId, Option.none()))
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("auto-away not applied", cause)))

  return {
    /** Takes an unregistered slot of the address; false when it has UNREGISTERED_PER_ADDRESS already. */
    admit: (ipKey: string): boolean => {
      const n = unregistered.get(ipKey) ?? 0
      if (n >= UNREGISTERED_PER_ADDRESS) return false
      unregistered.set(ipKey, n + 1)
      return true
    },
    release: (ipKey: string): void => {
      const n = (unregistered.get(ipKey) ?? 1) - 1
      if (n <= 0) unregistered.delete(ipKey)
      else unregistered.set(ipKey, n)
    },
    /**
     * `awayComing`: the session is about to set the member's own away message (pre-away), which auto-away would only
     * race with, so auto-away is left as it is (`settleAway` if that message is not set after all).
     */
    attach: (s: SessionHandle, awayComing = false): void => {
      add(byAccount, s.accountId, s)
      if (s.networkId === null) return
      boundAt.set(s, deps.arrived?.() ?? 0)
      if (add(byNetwork, s.networkId, s) === 1) deps.bound?.(s.networkId, true)
      if (s.present) {
        if (add(presentByNetwork, s.networkId, s) === 1 && !awayComing) deps.fork(autoAway(s.networkId, false))
      } else if (!presentByNetwork.has(s.networkId)) {
        // pre-away: every client of the network is away, this one included (the extension's "not present").
        deps.fork(autoAway(s.networkId, true))
      }
    },
    detach: (s: SessionHandle): void => {
      remove(byAccount, s.accountId, s)
      if (s.networkId === null || byNetwork.get(s.networkId)?.has(s) !== true) return
      if (remove(byNetwork, s.networkId, s) === 0) deps.bound?.(s.networkId, false)
      if (presentByNetwork.get(s.networkId)?.has(s) === true && remove(presentByNetwork, s.networkId, s) === 0) {
        deps.fork(autoAway(s.networkId, true))
      }
    },
    /** Auto-away as the network's present sessions say it should be now. */
    settleAway: (networkId: number): void => deps.fork(autoAway(networkId, !presentByNetwork.has(networkId))),
    /** The session says the member is present or not (IRCv3 pre-away `AWAY *`, or `AWAY` with no message). */
    setPresent: (s: SessionHandle, present: boolean): void => {
      if (s.present === present) return
      s.present = present
      if (s.networkId === null || byNetwork.get(s.networkId)?.has(s) !== true) return
      if (present && add(presentByNetwork, s.networkId, s) === 1) deps.fork(autoAway(s.networkId, false))
      if (!present && presentByNetwork.get(s.networkId)?.has(s) === true && remove(presentByNetwork, s.networkId, s) === 0) {
        deps.fork(autoAway(s.networkId, true))
      }
    },
    /** The sessions bound to a network. */
    ofNetwork: (networkId: number): ReadonlySet<SessionHandle> => byNetwork.get(networkId) ?? new Set(),
    /** Whether the upstream line that reached the listener as number `arrival` came after `s` bound (see `boundAt`). */
    boundBefore: (s: SessionHandle, arrival: number): boolean => (boundAt.get(s) ?? 0) < arrival,
    /** Every session of an account, control connections included. */
    ofAccount: (accountId: number): ReadonlySet<SessionHandle> => byAccount.get(accountId) ?? new Set(),
    /** Every registered session. */
    all: (): Iterable<SessionHandle> => [...byAccount.values()].flatMap((set) => [...set])
  }
}

export type SessionHub = ReturnType<typeof makeSessionHub>
