/**
 * Live channel events across the nodes of a cluster (src/services/nodes/ClusterLines.ts, the `s` stamps): two `belay
 * serve` nodes on one PostgreSQL, the network's connection on one, an IRC client with message-tags on the other. The
 * upstream's JOIN, MODE and TOPIC (no msgid of their own) reach that client with the msgid and time CHATHISTORY under
 * draft/event-playback shows for each on its node.
 */
import * as Crypto from "node:crypto"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startBelay } from "../support/BelayProcess.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { batchEnd, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode, testEnvironment } from "../support/TestDatabase.js"

const PASSWORD = "a long password"
const CAPS = "server-time batch message-tags draft/chathistory draft/event-playback"

describe(`stored channel events across nodes on ${describeMode}`, () => {
  it.scopedLive("another node's JOIN, MODE and TOPIC carry the msgid and time CHATHISTORY gives them", () =>
    Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make({ timeout: "20 seconds" })
      const env = yield* testEnvironment({ LOG_LEVEL: "warning" })
      const secretKey = Crypto.randomBytes(32).toString("base64")
      const nodes = []
      for (const name of ["n1", "n2"]) {
        const ircPort = yield* freePort
        const node = yield* startBelay({
          ...env,
          BELAY_SECRET_KEY: secretKey,
          BELAY_CLUSTER_ADDRESS: `127.0.0.1:${yield* freePort}`,
          BELAY_ADMIN_SOCKET: Path.join(env.BELAY_DATA_DIR!, `${name}.sock`),
          BELAY_IRC_LISTEN: `127.0.0.1:${ircPort}`
        })
        nodes.push({ node, ircPort })
      }
      expect((yield* runCli(nodes[0]!.node.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
      const args = ["network", "add", "alice", "--name", "fake", "--host", irc.host, "--port", String(irc.port), "--nick", "alice"]
      expect((yield* runCli(nodes[0]!.node.env, args)).code).toBe(0)
      const upstream = yield* irc.nextConnection("30 seconds")
      yield* upstream.register("alice")
      yield* upstream.send(
        ":alice!a@host JOIN #belay",
        ":irc.fake.test 353 alice = #belay :@alice bob",
        ":irc.fake.test 366 alice #belay :End of /NAMES list."
      )
      const connected = (url: string) =>
        Effect.promise(async () => /belay_connections\{state="connected"\} 1\b/.test(await (await fetch(`${url}/metrics`)).text()))
      let other: (typeof nodes)[number] | undefined
      for (let i = 0; i < 300 && other === undefined; i++) {
        if (yield* connected(nodes[0]!.node.url)) other = nodes[1]
        else if (yield* connected(nodes[1]!.node.url)) other = nodes[0]
        else yield* Effect.sleep("100 millis")
      }
      expect(other).toBeDefined()
      const c = yield* welcomedClient(other!.ircPort, "alice/fake", PASSWORD, CAPS)
      // Until the owner has heard this node's interest, a line may not cross: a numeric is sent until one arrives.
      for (let i = 0; ; i++) {
        yield* upstream.send(`:irc.fake.test 371 alice :probe ${i}`)
        if ((yield* c.next("371", "300 millis").pipe(Effect.option))._tag === "Some") break
        if (i > 60) return yield* Effect.fail(new Error("no upstream line ever crossed to the other node"))
      }

      yield* upstream.send(
        ":dave!d@host JOIN #belay",
        ":bob!b@host MODE #belay +v dave",
        ":bob!b@host TOPIC #belay :a new topic",
        ":bob!b@host PRIVMSG #belay :after the topic"
      )
      const got = yield* c.until((l) => l.command === "PRIVMSG" && l.params[1] === "after the topic", "15 seconds")
      const live = got.filter((l) => ["JOIN", "MODE", "TOPIC"].includes(l.command))
      expect(live.map((l) => l.command)).toEqual(["JOIN", "MODE", "TOPIC"])

      yield* c.send("CHATHISTORY LATEST #belay * 20")
      const page = yield* c.until(batchEnd, "15 seconds")
      for (const l of live) {
        const stored = page.find((h) => h.command === l.command && h.tags.msgid === l.tags.msgid)
        expect(stored, `${l.command} msgid=${l.tags.msgid}`).toBeDefined()
        expect(stored?.tags.time).toBe(l.tags.time)
      }
    }), 180_000)
})
