/**
 * Preferences between the nodes of a cluster (docs/contract.md "Preferences"; ClusterEvents.ts): two nodes' services
 * on one database. A buffer's choice and the client document stored on node A reach a tab of the account on node B,
 * B's in-memory choices (what Web Push asks) follow, and B's IRC clients would hear it (BufferPreferences.changes on
 * B, without the session of A that made it); nothing is sent back to A twice.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Layer, Logger, LogLevel, Option, PubSub, Queue } from "effect"
import { Services } from "../../../src/main.js"
import type { ServerFrame } from "../../../src/schema/SocketFrame.js"
import { AppConfig } from "../../../src/services/AppConfig.js"
import { MemberEvents, type Subscription } from "../../../src/services/events/MemberEvents.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { BufferPreferences } from "../../../src/services/preferences/BufferPreferences.js"
import { ClientPreferences } from "../../../src/services/preferences/ClientPreferences.js"
import { DatabaseLive } from "../../../src/services/storage/Database.js"
import { describeMode, settingsFrom, testEnvironment } from "../../support/TestDatabase.js"

const CLUSTER = { BELAY_CLUSTER_ADDRESS: "127.0.0.1:34432", BELAY_SECRET_KEY: "cd".repeat(32) }

const startNode = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const settings = yield* settingsFrom(env)
    const context = yield* Layer.build(
      Services.pipe(
        Layer.provideMerge(DatabaseLive),
        Layer.provideMerge(Layer.succeed(AppConfig, settings)),
        Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)),
        Layer.orDie
      )
    )
    return { get: <I, S>(tag: Context.Tag<I, S>): S => Context.unsafeGet(context as Context.Context<never>, tag) } as const
  })

const framesUntil = (subscription: Subscription, done: (frame: ServerFrame) => boolean, what: string) =>
  Effect.gen(function*() {
    const seen: Array<ServerFrame> = []
    for (;;) {
      const events = yield* subscription.take(64).pipe(
        Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error(`${what} never arrived; saw ${JSON.stringify(seen)}`) })
      )
      for (const event of events) {
        const frame = JSON.parse(event.frame) as ServerFrame
        seen.push(frame)
        if (done(frame)) return seen
      }
    }
  })

describe(`preferences across nodes on ${describeMode}`, () => {
  it.scopedLive("a choice and the client document stored on one node reach the other's tabs, memory and IRC clients", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment(CLUSTER)
      const a = yield* startNode(env)
      const b = yield* startNode(env)
      const account = yield* a.get(Accounts).create(`prefs${process.pid}`, "a long password").pipe(Effect.orDie)
      const networkId = yield* a.get(Networks).add(account.name, {
        name: "libera",
        host: "irc.example.org",
        port: 6697,
        tls: true,
        tlsInsecure: false,
        nick: "alice",
        username: Option.none(),
        realname: Option.none(),
        serverPassword: Option.none(),
        sasl: Option.none(),
        join: []
      }).pipe(Effect.orDie)
      const tabOnB = yield* b.get(MemberEvents).subscribe(account.id)
      const changesOnB = yield* PubSub.subscribe(b.get(BufferPreferences).changes)
      const changesOnA = yield* PubSub.subscribe(a.get(BufferPreferences).changes)
      // B holds the account's choices in memory (as Web Push does) before the change.
      yield* b.get(BufferPreferences).choicesOf(account.id)
      expect(b.get(BufferPreferences).peek(account.id, networkId, "#belay")).toMatchObject({ muted: false })

      // Made on A by an IRC client session (origin 7 of A).
      yield* a.get(BufferPreferences).set(account.id, networkId, "rfc1459", "#Belay", { muted: true, notify: "none" }, 7)
      const frames = yield* framesUntil(tabOnB, (f) => f.type === "buffer-preference", "the choice on B's tab")
      expect(frames.at(-1)).toEqual({
        type: "buffer-preference",
        networkId,
        target: "#Belay",
        pinned: false,
        muted: true,
        detached: false,
        notify: "none"
      })
      const onB = Chunk.toReadonlyArray(yield* Queue.takeAll(changesOnB))
      expect(onB).toHaveLength(1)
      // Another node's session ids mean nothing here: the origin stays on A.
      expect(onB[0]).not.toHaveProperty("origin")
      expect(b.get(BufferPreferences).peek(account.id, networkId, "#belay")).toEqual({ pinned: false, muted: true, detached: false, notify: "none" })

      yield* a.get(ClientPreferences).update(account.id, { theme: "dark" })
      const client = yield* framesUntil(tabOnB, (f) => f.type === "client-preferences", "the client document on B's tab")
      expect(client.at(-1)).toEqual({ type: "client-preferences", preferences: { theme: "dark", linkPreviews: true } })

      // A heard its own change once; nothing came back from B.
      yield* Effect.sleep("500 millis")
      expect(Chunk.toReadonlyArray(yield* Queue.takeAll(changesOnA))).toHaveLength(1)
    }), { timeout: 120_000 })
})
