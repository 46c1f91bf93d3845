/**
 * Rows for the message-history tests (MessageWriter, MessageHistory): accounts with networks inserted straight into
 * a test database, and messages to append. Each call makes fresh names, so tests sharing a database never collide.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { NewMessage, StoredRow } from "../../src/services/history/MessageRow.js"

let seq = 0

/** A fresh account with `count` networks. */
export const seedNetworks = (count = 1) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [account] = yield* sql<{ id: number }>`
      INSERT INTO accounts (name, password_hash) VALUES (${`ms${process.pid}x${++seq}`}, 'x') RETURNING id`
    const networkIds: Array<number> = []
    for (let i = 0; i < count; i++) {
      const [network] = yield* sql<{ id: number }>`
        INSERT INTO networks (account_id, name, host, port, nick)
        VALUES (${account!.id}, ${`net${i}`}, 'irc.example.org', 6697, 'me') RETURNING id`
      networkIds.push(network!.id)
    }
    return { accountId: account!.id, networkIds }
  })

/**
 * A fresh account with two networks and a channel on each, `#chat` on the first and `#room` on the second: the scopes
 * the search tests fill with generated lines (an `in` filter, and the account-wide search across both).
 */
export const seedTwoChannels = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const { accountId, networkIds: [net, other] } = yield* seedNetworks(2)
  const [chat] = yield* sql<{ id: number }>`
    INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${net!}, '#chat', '#chat', 'channel')
    RETURNING id`
  const [room] = yield* sql<{ id: number }>`
    INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${other!}, '#room', '#room', 'channel')
    RETURNING id`
  return { accountId, net: net!, other: other!, chat: chat!, room: room! }
})

export const T0 = Date.UTC(2025, 0, 31, 12, 0, 0)

/** A privmsg by alice at T0 in `target` (folded by lower-casing), unless `extra` says otherwise. */
export const message = (networkId: number, target: string, text: string, extra: Partial<NewMessage> = {}): NewMessage => ({
  networkId,
  target,
  targetFolded: target.toLowerCase(),
  bufferKind: target.startsWith(":server:") ? "server" : target.startsWith("#") ? "channel" : "dm",
  time: new Date(T0),
  kind: "privmsg",
  nick: "alice",
  text,
  self: false,
  ...extra
})

/** Texts of a buffer, oldest first, straight from the table. */
export const storedTexts = (networkId: number, targetFolded: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ text: string }>`
      SELECT m.text FROM messages m JOIN buffers b ON b.id = m.buffer_id
      WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded} ORDER BY m.id`
    return rows.map((r) => r.text)
  })

/** A stored channel row `id` of `networkId`, as MessageWriter announces one: for the live-order tests. */
export const storedRow = (id: number, networkId = 1): StoredRow => ({
  id,
  networkId,
  target: "#c",
  bufferKind: "channel",
  time: new Date(0),
  kind: "privmsg",
  nick: "bob",
  text: `row ${id}`,
  numeric: null,
  self: false,
  encryption: "plain"
})
