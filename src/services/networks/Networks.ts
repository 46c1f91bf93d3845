/**
 * Networks owns `networks` and `channels`: the stored IRC network configurations of every
 * account and the channels each network should be in (with their keys). Secrets (server password,
 * SASL password, channel keys) are sealed by SecretBox before they reach SQL.
 *
 * Changes are published on `changes` so the network supervisor can start, reconfigure and stop
 * actors without a restart: `update` (the web client's PATCH /api/networks/{id}) says whether the
 * change touches the connection (host, port, TLS, nick, server password: the network must
 * reconnect) or only what the actor reads later (name, username, realname, autojoin channels).
 * All state is in PostgreSQL; safe to call concurrently.
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Clock, Data, Duration, Effect, Option, PubSub } from "effect"
import { foldCase, type CaseMapping } from "../../irc/CaseMapping.js"
import { QuotaExceeded } from "../../schema/ToolErrors.js"
import { DestinationGuard } from "../egress/DestinationGuard.js"
import { AccountLimits } from "../identity/AccountLimits.js"
import { Accounts } from "../identity/Accounts.js"
import { SecretBox } from "../crypto/SecretBox.js"

export interface NetworkSettings {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
  readonly tlsInsecure: boolean
  readonly nick: string
  readonly username: Option.Option<string>
  readonly realname: Option.Option<string>
  readonly serverPassword: Option.Option<string>
  readonly sasl: Option.Option<{ readonly username: string; readonly password: string }>
  readonly join: ReadonlyArray<string>
}

/** A network as the actor needs it, secrets opened. Never logged or returned by a tool. */
export interface NetworkConfig {
  readonly id: number
  readonly accountId: number
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
  readonly tlsInsecure: boolean
  readonly nick: string
  readonly username: string | null
  readonly realname: string | null
  readonly serverPassword: string | null
  readonly sasl: { readonly username: string; readonly password: string } | null
  readonly enabled: boolean
  readonly awayMessage: string | null
}

/**
 * A change to a stored network (PATCH /api/networks/{id}): an absent field keeps its value; for username,
 * realname and the server password, null clears it; `join` replaces the channels joined on connect (the keys of
 * channels that stay are kept).
 */
export interface NetworkUpdate {
  readonly name?: string | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly tls?: boolean | undefined
  readonly nick?: string | undefined
  readonly username?: string | null | undefined
  readonly realname?: string | null | undefined
  readonly serverPassword?: string | null | undefined
  readonly join?: ReadonlyArray<string> | undefined
}

/** What list_networks shows of a stored network (its live fields come from the actor). */
export interface NetworkListing {
  readonly id: number
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
}

/** What listings show: no secrets, only whether they are set. */
export interface NetworkSummary extends Omit<NetworkConfig, "serverPassword" | "sasl" | "awayMessage"> {
  readonly hasServerPassword: boolean
  readonly hasSasl: boolean
}

export interface StoredChannel {
  readonly name: string
  readonly key: string | null
}

/**
 * `elsewhere`: made on another node of the cluster and relayed here (ClusterEvents.ts); whoever acts on the network
 * itself (its actor) is told by the node that made the change, so such a change only updates what this node shows.
 */
export type NetworkChange =
  | { readonly _tag: "Added"; readonly networkId: number; readonly elsewhere?: true }
  /** `reconnect`: the connection settings changed, so the network must connect again with them. */
  | { readonly _tag: "Changed"; readonly networkId: number; readonly reconnect: boolean; readonly elsewhere?: true }
  | { readonly _tag: "Removed"; readonly networkId: number; readonly accountId: number; readonly elsewhere?: true }

export class NetworkNotFound extends Data.TaggedError("NetworkNotFound")<{ readonly networkId: number }> {
  override get message() {
    return `no network with id ${this.networkId} on this account`
  }
}
export class NetworkExists extends Data.TaggedError("NetworkExists")<{ readonly name: string }> {
  override get message() {
    return `a network named ${JSON.stringify(this.name)} already exists on this account`
  }
}

interface NetworkRow {
  readonly id: number
  readonly accountId: number
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
  readonly tlsInsecure: boolean
  readonly nick: string
  readonly username: string | null
  readonly realname: string | null
  readonly serverPasswordEnc: Uint8Array | null
  readonly saslUsername: string | null
  readonly saslPasswordEnc: Uint8Array | null
  readonly enabled: boolean
  readonly awayMessage: string | null
}

/**
 * How long the boot snapshot (`loadAll`) is kept for the actors to take their rows from. Its entries are taken once
 * each and dropped on any write to their network; what a network never asks for (a disabled network's channels) is
 * dropped with the rest after this. Longer than the connect throttle needs to start 10,000 networks (200 s).
 */
const SNAPSHOT_TTL: Duration.Duration = Duration.minutes(10)

/** SQLSTATE 23505: the new name is another network's of the account (UNIQUE (account_id, name)). */
const uniqueViolation = (error: SqlError.SqlError): boolean => {
  const inner: unknown = error.cause
  return typeof inner === "object" && inner !== null && "code" in inner && inner.code === "23505"
}

export class Networks extends Effect.Service<Networks>()("belay/Networks", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox
    const accounts = yield* Accounts
    const changes = yield* PubSub.unbounded<NetworkChange>()
    const limits = yield* AccountLimits
    const guard = yield* DestinationGuard

    /** Channels to join on connect (a new network's, or PATCH's list) within the account's channel limit. */
    const fitsChannels = (accountId: number, join: ReadonlyArray<string>) =>
      Effect.flatMap(limits.limitOf(accountId, "channels"), (max) =>
        max !== null && new Set(join.map((c) => foldCase("rfc1459", c))).size > max
          ? Effect.fail(new QuotaExceeded({ limit: "channels", max }))
          : Effect.void)

    /**
     * list_networks' rows per account, kept until a network is added, changed or removed here or on another node of
     * the cluster (`changedElsewhere`): those are the only writes to the fields it shows. `generation` moves on each,
     * so a read that raced a write does not keep what it read.
     */
    const listings = new Map<number, ReadonlyArray<NetworkListing>>()
    let generation = 0
    const listingsChanged = () => {
      generation++
      listings.clear()
    }

    /**
     * The boot snapshot (`loadAll`): every network's row and channels read in two queries, so that the actors started at
     * boot take theirs from memory instead of two queries each. An entry is taken once (`config`, `channels`) and
     * dropped by any write to its network here; the whole snapshot is dropped after SNAPSHOT_TTL. `writes` moves on
     * every write, so a snapshot read while one happened is not kept.
     */
    const snapshotRows = new Map<number, NetworkRow>()
    const snapshotChannels = new Map<number, Array<{ readonly name: string; readonly keyEnc: Uint8Array | null }>>()
    let snapshotUntil = 0
    let writes = 0
    const written = (networkId: number) => {
      writes++
      snapshotRows.delete(networkId)
      snapshotChannels.delete(networkId)
    }
    /** The snapshot's entry for the network, taken out of it; undefined when there is none (or it expired). */
    const take = <A>(map: Map<number, A>, networkId: number): Effect.Effect<A | undefined> =>
      map.size === 0 ? Effect.succeed(undefined) : Effect.map(Clock.currentTimeMillis, (now) => {
        if (now > snapshotUntil) {
          snapshotRows.clear()
          snapshotChannels.clear()
          return undefined
        }
        const entry = map.get(networkId)
        map.delete(networkId)
        return entry
      })

    const columns = sql`
      id, account_id AS "accountId", name, host, port, tls, tls_insecure AS "tlsInsecure", nick, username, realname,
      server_password_enc AS "serverPasswordEnc", sasl_username AS "saslUsername", sasl_password_enc AS "saslPasswordEnc",
      enabled, away_message AS "awayMessage"`

    // The fields listings and actors share; secrets are opened only for the actor.
    const publicFields = (row: NetworkRow) => ({
      id: row.id,
      accountId: row.accountId,
      name: row.name,
      host: row.host,
      port: row.port,
      tls: row.tls,
      tlsInsecure: row.tlsInsecure,
      nick: row.nick,
      enabled: row.enabled
    })

    // publicFields' fields written out, not spread: V8 gives every object made by a spread followed by more properties
    // a hidden class of its own (~450 bytes), kept with the actor's config (bench/results/memory-breakdown.md "At
    // 10,000 networks, per-network objects").
    const toConfig = (row: NetworkRow): NetworkConfig => ({
      id: row.id, accountId: row.accountId, name: row.name, host: row.host, port: row.port, tls: row.tls,
      tlsInsecure: row.tlsInsecure, nick: row.nick, enabled: row.enabled,
      username: row.username,
      realname: row.realname,
      serverPassword: row.serverPasswordEnc ? box.open("server-password", row.serverPasswordEnc) : null,
      sasl: row.saslUsername && row.saslPasswordEnc
        ? { username: row.saslUsername, password: box.open("sasl-password", row.saslPasswordEnc) }
        : null,
      awayMessage: row.awayMessage
    })

    const toSummary = (row: NetworkRow): NetworkSummary => ({
      ...publicFields(row),
      username: row.username,
      realname: row.realname,
      hasServerPassword: row.serverPasswordEnc !== null,
      hasSasl: row.saslUsername !== null
    })

    const add = Effect.fn("Networks.add")(function*(accountName: string, settings: NetworkSettings) {
      const account = yield* accounts.require(accountName)
      // docs/decisions/hosting.md "One destination guard": a refused address is refused now, nothing stored.
      yield* guard.vet(settings.host, settings.port)
      yield* fitsChannels(account.id, settings.join)
      // docs/decisions/account-limits.md "A refusal names the limit and creates nothing": counted under the account's lock.
      const counted = Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM networks WHERE account_id = ${account.id}`, (r) => r[0]?.n ?? 0)
      const id = yield* limits.within(account.id, "networks", counted,
        Effect.gen(function*() {
          const rows = yield* sql<{ id: number }>`
            INSERT INTO networks ${
            sql.insert({
              account_id: account.id,
              name: settings.name,
              host: settings.host,
              port: settings.port,
              tls: settings.tls,
              tls_insecure: settings.tlsInsecure,
              nick: settings.nick,
              username: Option.getOrNull(settings.username),
              realname: Option.getOrNull(settings.realname),
              server_password_enc: Option.getOrNull(Option.map(settings.serverPassword, (p) => box.seal("server-password", p))),
              sasl_username: Option.getOrNull(Option.map(settings.sasl, (s) => s.username)),
              sasl_password_enc: Option.getOrNull(Option.map(settings.sasl, (s) => box.seal("sasl-password", s.password)))
            })
          }
            ON CONFLICT (account_id, name) DO NOTHING
            RETURNING id`
          const row = rows[0]
          if (!row) return Option.none<number>()
          for (const channel of settings.join) {
            yield* sql`
              INSERT INTO channels (network_id, name, name_folded) VALUES (${row.id}, ${channel}, ${foldCase("rfc1459", channel)})
              ON CONFLICT (network_id, name_folded) DO NOTHING`
          }
          return Option.some(row.id)
        })
      ).pipe(Effect.catchTag("SqlError", Effect.die))
      if (Option.isNone(id)) return yield* new NetworkExists({ name: settings.name })
      listingsChanged()
      yield* PubSub.publish(changes, { _tag: "Added", networkId: id.value } as const)
      yield* Effect.logInfo("network added").pipe(Effect.annotateLogs({ account: accountName, networkId: id.value }))
      return id.value
    })

    const listForAccount = Effect.fn("Networks.listForAccount")(function*(accountId: number) {
      const rows = yield* sql<NetworkRow>`SELECT ${columns} FROM networks WHERE account_id = ${accountId} ORDER BY id`.pipe(
        Effect.orDie
      )
      return rows.map(toSummary)
    })

    /** list_networks' rows of the account, in id order: one query, then kept until a network changes. */
    const listing = (accountId: number): Effect.Effect<ReadonlyArray<NetworkListing>> =>
      Effect.suspend(() => {
        const kept = listings.get(accountId)
        if (kept !== undefined) return Effect.succeed(kept)
        const seen = generation
        return Effect.map(
          sql<NetworkListing>`
            SELECT id, name, host, port, tls FROM networks WHERE account_id = ${accountId} ORDER BY id`.pipe(Effect.orDie),
          (rows) => {
            if (seen === generation) listings.set(accountId, rows)
            return rows
          }
        )
      })

    const list = Effect.fn("Networks.list")(function*(accountName: string) {
      const account = yield* accounts.require(accountName)
      return yield* listForAccount(account.id)
    })

    const remove = Effect.fn("Networks.remove")(function*(accountName: string, networkId: number) {
      const account = yield* accounts.require(accountName)
      const rows = yield* sql<{ id: number }>`
        DELETE FROM networks WHERE id = ${networkId} AND account_id = ${account.id} RETURNING id`.pipe(Effect.orDie)
      if (!rows[0]) return yield* new NetworkNotFound({ networkId })
      owners.delete(networkId)
      listingsChanged()
      written(networkId)
      yield* PubSub.publish(changes, { _tag: "Removed", networkId, accountId: account.id } as const)
      yield* Effect.logInfo("network removed").pipe(Effect.annotateLogs({ account: accountName, networkId }))
    })

    /**
     * Applies `patch` to the account's network in one transaction (the row locked, so two edits apply one after
     * the other); the network as it is now. Another network of the account with the new name: NetworkExists,
     * nothing changed. Publishes `Changed`, with `reconnect` when a connection setting actually changed.
     */
    const update = Effect.fn("Networks.update")(function*(accountId: number, networkId: number, patch: NetworkUpdate) {
      if (patch.join !== undefined) yield* fitsChannels(accountId, patch.join)
      if (patch.host !== undefined || patch.port !== undefined) {
        const [now] = yield* sql<{ host: string; port: number }>`
          SELECT host, port FROM networks WHERE id = ${networkId} AND account_id = ${accountId}`.pipe(Effect.orDie)
        if (now !== undefined) yield* guard.vet(patch.host ?? now.host, patch.port ?? now.port)
      }
      written(networkId)
      const result = yield* sql.withTransaction(
        Effect.gen(function*() {
          const before = (yield* sql<NetworkRow>`
            SELECT ${columns} FROM networks WHERE id = ${networkId} AND account_id = ${accountId} FOR UPDATE`)[0]
          if (before === undefined) return Option.none()
          const set: Record<string, unknown> = {}
          if (patch.name !== undefined) set.name = patch.name
          if (patch.host !== undefined) set.host = patch.host
          if (patch.port !== undefined) set.port = patch.port
          if (patch.tls !== undefined) set.tls = patch.tls
          if (patch.nick !== undefined) set.nick = patch.nick
          if (patch.username !== undefined) set.username = patch.username
          if (patch.realname !== undefined) set.realname = patch.realname
          if (patch.serverPassword !== undefined) {
            set.server_password_enc = patch.serverPassword === null ? null : box.seal("server-password", patch.serverPassword)
          }
          const after = Object.keys(set).length === 0
            ? before
            : (yield* sql<NetworkRow>`
              UPDATE networks SET ${sql.update(set)} WHERE id = ${networkId} RETURNING ${columns}`)[0]!
          if (patch.join !== undefined) {
            const folded = [...new Map(patch.join.map((c) => [foldCase("rfc1459", c), c])).entries()]
            const keep = folded.map(([f]) => f)
            yield* keep.length === 0
              ? sql`DELETE FROM channels WHERE network_id = ${networkId}`
              : sql`DELETE FROM channels WHERE network_id = ${networkId} AND NOT ${sql.in("name_folded", keep)}`
            for (const [nameFolded, name] of folded) {
              yield* sql`
                INSERT INTO channels (network_id, name, name_folded) VALUES (${networkId}, ${name}, ${nameFolded})
                ON CONFLICT (network_id, name_folded) DO NOTHING`
            }
          }
          const passwordChanged = patch.serverPassword !== undefined &&
            (patch.serverPassword === null
              ? before.serverPasswordEnc !== null
              : before.serverPasswordEnc === null || box.open("server-password", before.serverPasswordEnc) !== patch.serverPassword)
          const reconnect = passwordChanged || after.host !== before.host || after.port !== before.port ||
            after.tls !== before.tls || after.nick !== before.nick
          return Option.some({ summary: toSummary(after), reconnect })
        })
      ).pipe(
        Effect.catchIf(
          (error) => error instanceof SqlError.SqlError && uniqueViolation(error),
          () => Effect.fail(new NetworkExists({ name: patch.name ?? "" }))
        ),
        Effect.catchTag("SqlError", Effect.die)
      )
      if (Option.isNone(result)) return yield* new NetworkNotFound({ networkId })
      listingsChanged()
      written(networkId)
      yield* PubSub.publish(changes, { _tag: "Changed", networkId, reconnect: result.value.reconnect } as const)
      yield* Effect.logInfo("network changed").pipe(
        Effect.annotateLogs({ networkId, reconnect: result.value.reconnect })
      )
      return result.value.summary
    })

    /** The channels joined on connect of each of the account's networks, in the order they were added. */
    const autojoin = Effect.fn("Networks.autojoin")(function*(accountId: number) {
      const rows = yield* sql<{ networkId: number; name: string }>`
        SELECT c.network_id AS "networkId", c.name FROM channels c JOIN networks n ON n.id = c.network_id
        WHERE n.account_id = ${accountId} ORDER BY c.id`.pipe(Effect.orDie)
      const byNetwork = new Map<number, Array<string>>()
      for (const row of rows) {
        let list = byNetwork.get(row.networkId)
        if (list === undefined) byNetwork.set(row.networkId, (list = []))
        list.push(row.name)
      }
      return byNetwork as ReadonlyMap<number, ReadonlyArray<string>>
    })

    /** The network with its secrets opened, for the actor. */
    const config = Effect.fn("Networks.config")(function*(networkId: number) {
      const kept = yield* take(snapshotRows, networkId)
      if (kept !== undefined) return Option.some(toConfig(kept))
      const rows = yield* sql<NetworkRow>`SELECT ${columns} FROM networks WHERE id = ${networkId}`.pipe(Effect.orDie)
      return Option.map(Option.fromNullable(rows[0]), toConfig)
    })

    /** Summary of a network if it belongs to the account: the ownership check of every tool. */
    const owned = Effect.fn("Networks.owned")(function*(accountId: number, networkId: number) {
      const rows = yield* sql<NetworkRow>`
        SELECT ${columns} FROM networks WHERE id = ${networkId} AND account_id = ${accountId}`.pipe(Effect.orDie)
      return Option.map(Option.fromNullable(rows[0]), toSummary)
    })

    /**
     * Network id → account id, for networks seen to be owned: a network never changes account, so an entry stays
     * true until the network is removed (`remove` drops it, and `changedElsewhere` when another node of the cluster
     * removed it). Every tool call checks ownership first; this makes the check free after the first call. Removed
     * through another process outside a cluster, a network is still found here, and the call then meets the
     * actor's own "unknown network" or an empty history.
     */
    const owners = new Map<number, number>()

    /** Whether the network belongs to the account: the ownership check of every tool with a networkId. */
    const isOwnedBy = (accountId: number, networkId: number): Effect.Effect<boolean> => {
      const known = owners.get(networkId)
      if (known !== undefined) return Effect.succeed(known === accountId)
      return Effect.map(
        sql<{ accountId: number }>`SELECT account_id AS "accountId" FROM networks WHERE id = ${networkId}`.pipe(Effect.orDie),
        (rows) => {
          const owner = rows[0]?.accountId
          if (owner === undefined) return false
          owners.set(networkId, owner)
          return owner === accountId
        }
      )
    }

    /** The channel limit of the network's account (null: none), which the actor checks a JOIN against. */
    const channelLimit = (networkId: number): Effect.Effect<number | null> =>
      Effect.flatMap(
        sql<{ accountId: number }>`SELECT account_id AS "accountId" FROM networks WHERE id = ${networkId}`.pipe(Effect.orDie),
        (rows) => (rows[0] === undefined ? Effect.succeed(null) : limits.limitOf(rows[0].accountId, "channels"))
      )

    const allIds = Effect.fn("Networks.allIds")(function*() {
      const rows = yield* sql<{ id: number }>`SELECT id FROM networks ORDER BY id`.pipe(Effect.orDie)
      return rows.map((r) => r.id)
    })

    /**
     * Every network's id, in order, with the boot snapshot filled: every row and every channel in two queries, which
     * the actors started next take instead of querying one by one (10,000 networks: 2 queries, not 20,000).
     */
    const loadAll = Effect.fn("Networks.loadAll")(function*() {
      const before = writes
      const rows = yield* sql<NetworkRow>`SELECT ${columns} FROM networks ORDER BY id`.pipe(Effect.orDie)
      const channelRows = yield* sql<{ networkId: number; name: string; keyEnc: Uint8Array | null }>`
        SELECT network_id AS "networkId", name, key_enc AS "keyEnc" FROM channels ORDER BY id`.pipe(Effect.orDie)
      if (writes === before) {
        snapshotUntil = (yield* Clock.currentTimeMillis) + Duration.toMillis(SNAPSHOT_TTL)
        for (const row of rows) {
          snapshotRows.set(row.id, row)
          snapshotChannels.set(row.id, [])
        }
        for (const c of channelRows) snapshotChannels.get(c.networkId)?.push({ name: c.name, keyEnc: c.keyEnc })
      }
      return rows.map((r) => r.id)
    })

    const setEnabled = Effect.fn("Networks.setEnabled")(function*(networkId: number, enabled: boolean) {
      written(networkId)
      yield* sql`UPDATE networks SET enabled = ${enabled} WHERE id = ${networkId}`.pipe(Effect.orDie)
    })

    /** Account deletion (docs/decisions/leaving.md), in the caller's transaction: offline for good, on every node. */
    const disableAllOfAccount = (accountId: number) =>
      Effect.map(sql<{ id: number }>`UPDATE networks SET enabled = false WHERE account_id = ${accountId} RETURNING id`, (rows) => {
        for (const r of rows) written(r.id)
        return rows.map((r) => r.id)
      })

    /** Announces `ids` removed, as `remove` does: each actor is stopped wherever it runs, and QUITs. */
    const announceRemoved = (accountId: number, ids: ReadonlyArray<number>) =>
      Effect.suspend(() => {
        if (ids.length === 0) return Effect.void
        for (const networkId of ids) {
          owners.delete(networkId)
          written(networkId)
        }
        listingsChanged()
        return Effect.asVoid(PubSub.publishAll(changes, ids.map((networkId) => ({ _tag: "Removed", networkId, accountId } as const))))
      })

    /** Stops every network of an account being deleted (again at each resume: the marker may have died first). */
    const stopAllOfAccount = Effect.fn("Networks.stopAllOfAccount")(function*(accountId: number) {
      const rows = yield* sql<{ id: number }>`SELECT id FROM networks WHERE account_id = ${accountId}`.pipe(Effect.orDie)
      yield* announceRemoved(accountId, rows.map((r) => r.id))
    })

    /** Deletes up to `limit` networks of an account being deleted, their contents already gone; how many. */
    const removeSomeOfAccount = Effect.fn("Networks.removeSomeOfAccount")(function*(accountId: number, limit: number) {
      const rows = yield* sql<{ id: number }>`
        DELETE FROM networks WHERE id IN (SELECT id FROM networks WHERE account_id = ${accountId} LIMIT ${limit})
        RETURNING id`.pipe(Effect.orDie)
      yield* announceRemoved(accountId, rows.map((r) => r.id))
      return rows.length
    })

    const setAwayMessage = Effect.fn("Networks.setAwayMessage")(function*(networkId: number, message: string | null) {
      written(networkId)
      yield* sql`UPDATE networks SET away_message = ${message} WHERE id = ${networkId}`.pipe(Effect.orDie)
    })

    const channels = Effect.fn("Networks.channels")(function*(networkId: number) {
      const kept = yield* take(snapshotChannels, networkId)
      const rows = kept ?? (yield* sql<{ name: string; keyEnc: Uint8Array | null }>`
        SELECT name, key_enc AS "keyEnc" FROM channels WHERE network_id = ${networkId} ORDER BY id`.pipe(Effect.orDie))
      return rows.map((r): StoredChannel => ({ name: r.name, key: r.keyEnc ? box.open("channel-key", r.keyEnc) : null }))
    })

    /**
     * Remember a joined channel. `key`: a string stores it, null clears it, undefined
     * keeps what is stored (a JOIN without a key must not forget the key).
     */
    const rememberChannel = Effect.fn("Networks.rememberChannel")(
      function*(networkId: number, mapping: CaseMapping, name: string, key?: string | null) {
        written(networkId)
        const folded = foldCase(mapping, name)
        const keyEnc = key === undefined || key === null ? null : box.seal("channel-key", key)
        if (key === undefined) {
          yield* sql`
            INSERT INTO channels (network_id, name, name_folded) VALUES (${networkId}, ${name}, ${folded})
            ON CONFLICT (network_id, name_folded) DO UPDATE SET name = EXCLUDED.name`.pipe(Effect.orDie)
        } else {
          yield* sql`
            INSERT INTO channels (network_id, name, name_folded, key_enc) VALUES (${networkId}, ${name}, ${folded}, ${keyEnc})
            ON CONFLICT (network_id, name_folded) DO UPDATE SET name = EXCLUDED.name, key_enc = EXCLUDED.key_enc`.pipe(
            Effect.orDie
          )
        }
      }
    )

    const forgetChannel = Effect.fn("Networks.forgetChannel")(
      function*(networkId: number, mapping: CaseMapping, name: string) {
        written(networkId)
        yield* sql`DELETE FROM channels WHERE network_id = ${networkId} AND name_folded = ${foldCase(mapping, name)}`.pipe(
          Effect.orDie
        )
      }
    )

    /** A change another node made (ClusterEvents.ts), announced here with `elsewhere`. */
    const changedElsewhere = (change: NetworkChange): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (change._tag === "Removed") owners.delete(change.networkId)
        listingsChanged()
        written(change.networkId)
        return Effect.asVoid(PubSub.publish(changes, { ...change, elsewhere: true }))
      })

    return {
      add,
      list,
      listForAccount,
      listing,
      isOwnedBy,
      channelLimit,
      remove,
      update,
      autojoin,
      config,
      owned,
      allIds,
      loadAll,
      setEnabled,
      disableAllOfAccount,
      stopAllOfAccount,
      removeSomeOfAccount,
      setAwayMessage,
      channels,
      rememberChannel,
      forgetChannel,
      changes,
      changedElsewhere
    } as const
  }),
  dependencies: [Accounts.Default, SecretBox.Default, AccountLimits.Default, DestinationGuard.Default]
}) {}
