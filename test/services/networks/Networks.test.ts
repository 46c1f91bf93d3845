/**
 * Networks (and E2eKeys' part of the boot) against a real database (embedded, or TEST_DATABASE_URL): what they keep
 * in memory — list_networks' rows per account, and the boot snapshots the actors take their rows and keys from —
 * always answers what the tables hold after a write made through them.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { E2eKeys } from "../../../src/services/networks/E2eKeys.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { seedNetworks as seed } from "../../support/MessageFixtures.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const accountName = (accountId: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ name: string }>`SELECT name FROM accounts WHERE id = ${accountId}`, (rows) => rows[0]!.name))

describe(`Networks on ${describeMode}`, () => {
  it.layer(Layer.mergeAll(Networks.Default, Accounts.Default, E2eKeys.Default).pipe(Layer.provideMerge(TestDatabaseLive())), {
    timeout: 120_000
  })((it) => {
    it.scoped("list_networks' rows follow every add, change and removal", () =>
      Effect.gen(function*() {
        const { accountId, networkIds: [a, b] } = yield* seed(2)
        const networks = yield* Networks
        const account = yield* accountName(accountId)
        const names = Effect.map(networks.listing(accountId), (rows) => rows.map((r) => [r.id, r.name, r.port]))
        expect(yield* names).toEqual([[a, "net0", 6697], [b, "net1", 6697]])
        // Asked again with nothing changed: the same rows.
        expect(yield* networks.listing(accountId)).toBe(yield* networks.listing(accountId))

        yield* networks.update(accountId, a!, { name: "renamed", port: 6667 })
        expect(yield* names).toEqual([[a, "renamed", 6667], [b, "net1", 6697]])

        const c = yield* networks.add(account, {
          name: "third",
          host: "irc.example.org",
          port: 6697,
          tls: true,
          tlsInsecure: false,
          nick: "me",
          username: Option.none(),
          realname: Option.none(),
          serverPassword: Option.none(),
          sasl: Option.none(),
          join: []
        })
        expect(yield* names).toEqual([[a, "renamed", 6667], [b, "net1", 6697], [c, "third", 6697]])

        yield* networks.remove(account, b!)
        expect(yield* names).toEqual([[a, "renamed", 6667], [c, "third", 6697]])

        // Changed on another node of a cluster: relayed here, then shown.
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE networks SET name = 'elsewhere' WHERE id = ${c}`
        yield* networks.changedElsewhere({ _tag: "Changed", networkId: c, reconnect: false })
        expect(yield* names).toEqual([[a, "renamed", 6667], [c, "elsewhere", 6697]])
      }))

    it.scoped("the boot snapshot gives what the tables hold, and a write after it is what is read next", () =>
      Effect.gen(function*() {
        const { networkIds: [a, b] } = yield* seed(2)
        const networks = yield* Networks
        yield* networks.rememberChannel(a!, "rfc1459", "#one", "secret")
        yield* networks.rememberChannel(a!, "rfc1459", "#two")

        // From the snapshot, then (taken) from the tables: the same.
        const ids = yield* networks.loadAll()
        expect(ids).toEqual(expect.arrayContaining([a, b]))
        const fromSnapshot = [yield* networks.config(a!), yield* networks.channels(a!), yield* networks.channels(b!)]
        const fromTables = [yield* networks.config(a!), yield* networks.channels(a!), yield* networks.channels(b!)]
        expect(fromSnapshot).toEqual(fromTables)
        expect(fromSnapshot[1]).toEqual([{ name: "#one", key: "secret" }, { name: "#two", key: null }])
        expect(fromSnapshot[2]).toEqual([])

        // Written after the snapshot was read: the write is what the actor reads.
        yield* networks.loadAll()
        yield* networks.setEnabled(a!, false)
        expect(Option.map(yield* networks.config(a!), (c) => c.enabled)).toEqual(Option.some(false))
        yield* networks.forgetChannel(a!, "rfc1459", "#one")
        yield* networks.rememberChannel(b!, "rfc1459", "#three")
        expect(yield* networks.channels(a!)).toEqual([{ name: "#two", key: null }])
        expect(yield* networks.channels(b!)).toEqual([{ name: "#three", key: null }])
      }))

    it.scoped("the boot snapshot of end-to-end keys gives what the table holds, and a set or clear after it is read next", () =>
      Effect.gen(function*() {
        const { accountId, networkIds: [a, b] } = yield* seed(2)
        const account = yield* accountName(accountId)
        const e2e = yield* E2eKeys
        yield* e2e.set(account, a!, "#Enc", "cbc:channel key")
        const targets = (networkId: number) =>
          Effect.map(e2e.forNetwork(networkId), (keys) => [...keys.entries()].map(([folded, k]) => [folded, k.target, k.key.mode]))

        yield* e2e.loadAll([a!, b!])
        const fromSnapshot = [yield* targets(a!), yield* targets(b!)]
        expect(fromSnapshot).toEqual([yield* targets(a!), yield* targets(b!)])
        expect(fromSnapshot).toEqual([[["#enc", "#Enc", "cbc"]], []])

        yield* e2e.loadAll([a!, b!])
        yield* e2e.clear(account, a!, "#Enc")
        yield* e2e.set(account, b!, "bob", "cbc:dm key")
        expect([yield* targets(a!), yield* targets(b!)]).toEqual([[], [["bob", "bob", "cbc"]]])
      }))
  })
})
