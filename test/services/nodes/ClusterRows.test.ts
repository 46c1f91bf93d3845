/**
 * ClusterRows: rows read back the way another node of a cluster reads them (a batch's notice, a catch-up page) carry
 * the client-only tags of their lines exactly as the node that stored them announced them on `stored`
 * (StoredAnnouncer): others' tags and the member's own from the upstream's echo, within the 4094-byte bound; none for a
 * row without a line, without tags, with only server tags, or with `;+` only in its text; and never the line itself.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, PubSub, Queue } from "effect"
import { CLIENT_TAGS_MAX_BYTES } from "../../../src/irc/TaggedMessages.js"
import type { NewMessage, StoredRow } from "../../../src/services/history/MessageRow.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { makeClusterRows } from "../../../src/services/nodes/ClusterRows.js"
import { message, seedNetworks } from "../../support/MessageFixtures.js"
import { describeMode } from "../../support/TestDatabase.js"
import { TestServicesLive } from "../../support/TestServices.js"

const TIME = "time=2025-01-31T12:00:00.000Z"
const big = "x".repeat(CLIENT_TAGS_MAX_BYTES)

/** [name, the line as received (the row's `raw`), what else the row is, the client-only tags expected]. */
const cases: ReadonlyArray<readonly [string, string | null, Partial<NewMessage>, Record<string, string> | undefined]> = [
  ["no line (a connection note)", null, {}, undefined],
  ["a line without tags", ":bob!b@h PRIVMSG #belay :hi", {}, undefined],
  ["server tags only", `@${TIME};msgid=up-1;account=bob :bob!b@h PRIVMSG #belay :hi`, {}, undefined],
  ["server tags, and ;+ only in the text", `@${TIME};msgid=up-2 :bob!b@h PRIVMSG #belay :a;+b=c`, {}, undefined],
  ["a bare + is no tag", "@+;msgid=up-3 :bob!b@h PRIVMSG #belay :hi", {}, undefined],
  ["a client tag first", "@+draft/reply=up-1;msgid=up-4 :bob!b@h PRIVMSG #belay :a reply", {}, { "+draft/reply": "up-1" }],
  [
    "client tags after the server's, unescaped",
    `@${TIME};msgid=up-5;+draft/reply=up-1;+vendor/x=a\\sb :bob!b@h NOTICE #belay :noted`,
    { kind: "notice" },
    { "+draft/reply": "up-1", "+vendor/x": "a b" }
  ],
  [
    "the member's own, from the upstream's echo",
    `@msgid=up-6;+draft/reply=up-5;+vendor/x=1 :alice!a@h PRIVMSG #belay :mine`,
    { nick: "alice", self: true },
    { "+draft/reply": "up-5", "+vendor/x": "1" }
  ],
  ["one past the bound dropped whole", `@+a=1;+big=${big};+z=2 :bob!b@h PRIVMSG #belay :long`, {}, { "+a": "1", "+z": "2" }]
]

describe(`ClusterRows on ${describeMode}`, () => {
  it.layer(TestServicesLive(), { timeout: 60_000 })((it) => {
    it.scoped("rows read back carry the client-only tags their node announced, and not their line", () =>
      Effect.gen(function*() {
        const writer = yield* MessageWriter
        const { networkIds: [networkId] } = yield* seedNetworks()
        const stored = yield* PubSub.subscribe(writer.stored)
        for (const [name, raw, extra] of cases) {
          yield* writer.append(message(networkId!, "#belay", name, { nick: "bob", raw, ...extra }))
        }
        yield* writer.flush
        const announced = Chunk.toArray(yield* Queue.takeAll(stored)).flatMap((batch): ReadonlyArray<StoredRow> => batch)
        expect(announced.map((r) => r.text)).toEqual(cases.map(([name]) => name))
        // The running node's own announcement: the tags its IRC clients get.
        expect(announced.map((r) => r.clientTags)).toEqual(cases.map(([, , , tags]) => tags))

        const readBack = makeClusterRows(yield* SqlClient.SqlClient)
        const first = announced[0]!.id
        const last = announced[announced.length - 1]!.id
        const expected = announced.map((row) => ({ ...row, targetFolded: "#belay" }))
        // A batch's notice (its network named, and every network), and a catch-up page: the same rows, the same tags.
        expect(yield* readBack.batch([networkId!], first, last)).toEqual(expected)
        expect(yield* readBack.batch([], first, last)).toEqual(expected)
        expect(yield* readBack.after(first - 1, 1000)).toEqual(expected)
        expect((yield* readBack.after(first - 1, 1000)).some((row) => "raw" in row)).toBe(false)
        // Another network's batch has none of them.
        expect(yield* readBack.batch([networkId! + 100_000], first, last)).toEqual([])
      }))
  })
})
