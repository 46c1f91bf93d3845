/**
 * The IRC client listener on a cluster (docs/decisions/irc-listener.md "Upstream lines across nodes"): two `belay serve` nodes on
 * one PostgreSQL, the network's connection on one of them, an IRC client signed in on the other. The client is
 * welcomed with the network's channel as the owner sees it (JOIN, topic, NAMES, through the entity's RPCs), hears the
 * upstream's JOIN, MODE and TOPIC lines among its messages in the order the server sent them, with the client-only
 * tags (`+draft/reply`) others' messages came with, and its own labelled raw command reaches the upstream through the
 * owner, its answer coming back under the client's label.
 */
import * as Crypto from "node:crypto"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, type RunningBelay, runCli, startBelay } from "../support/BelayProcess.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode, testEnvironment } from "../support/TestDatabase.js"

const PASSWORD = "a long password"

const connectedOn = (node: RunningBelay) =>
  Effect.promise(async () => {
    const body = await (await fetch(`${node.url}/metrics`)).text()
    const match = /belay_connections\{state="connected"\} (\d+)/.exec(body)
    return match ? Number(match[1]) : 0
  })

describe(`the IRC client listener on a cluster on ${describeMode}`, () => {
  it.scopedLive("a client on one node hears the upstream lines of a network run by another, in order", () =>
    Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make({ timeout: "20 seconds" })
      const env = yield* testEnvironment({ LOG_LEVEL: "warning" })
      const secretKey = Crypto.randomBytes(32).toString("base64")
      const startNode = (name: string) =>
        Effect.gen(function*() {
          const runnerPort = yield* freePort
          const ircPort = yield* freePort
          const node = yield* startBelay({
            ...env,
            BELAY_SECRET_KEY: secretKey,
            BELAY_CLUSTER_ADDRESS: `127.0.0.1:${runnerPort}`,
            BELAY_ADMIN_SOCKET: Path.join(env.BELAY_DATA_DIR!, `${name}.sock`),
            BELAY_IRC_LISTEN: `127.0.0.1:${ircPort}`
          })
          return { node, ircPort }
        })
      const one = yield* startNode("n1")
      const two = yield* startNode("n2")
      expect((yield* runCli(one.node.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
      const added = yield* runCli(one.node.env, [
        "network", "add", "alice", "--name", "fake", "--host", irc.host, "--port", String(irc.port), "--nick", "alice"
      ])
      expect(added.code).toBe(0)
      const upstream = yield* irc.nextConnection("30 seconds")
      yield* upstream.register("alice", undefined, { caps: ["labeled-response", "batch", "message-tags"] })
      yield* upstream.send(
        ":alice!a@host JOIN #belay",
        ":irc.fake.test 332 alice #belay :Belay talk",
        ":irc.fake.test 333 alice #belay bob 1700000000",
        ":irc.fake.test 353 alice = #belay :@alice bob +carol",
        ":irc.fake.test 366 alice #belay :End of /NAMES list."
      )
      // The client signs in on the node that does not run the network.
      let owner: typeof one | undefined
      for (let i = 0; i < 300 && owner === undefined; i++) {
        if ((yield* connectedOn(one.node)) === 1) owner = one
        else if ((yield* connectedOn(two.node)) === 1) owner = two
        else yield* Effect.sleep("100 millis")
      }
      expect(owner).toBeDefined()
      const other = owner === one ? two : one

      const c = yield* welcomedClient(other.ircPort, "alice/fake", PASSWORD, "server-time batch labeled-response message-tags")
      // The welcome burst, drawn by the owner: the channel, its topic and members.
      const burst = c.burst.map((l) => `${l.command} ${l.params.slice(1).join(" ")}`)
      expect(burst).toContain("332 #belay Belay talk")
      expect(burst).toContain("353 = #belay @alice bob +carol")
      expect(c.burst.some((l) => l.command === "JOIN" && l.params[0] === "#belay")).toBe(true)

      // The client's node announces its interest through the LISTEN channel: until the owner has heard it, a line
      // sent upstream may not cross. A numeric is sent until one arrives.
      for (let i = 0; ; i++) {
        yield* upstream.send(`:irc.fake.test 371 alice :probe ${i}`)
        const got = yield* c.next((l) => l.command === "371", "300 millis").pipe(Effect.option)
        if (got._tag === "Some") break
        if (i > 60) return yield* Effect.fail(new Error("no upstream line ever crossed to the other node"))
      }

      yield* upstream.send(
        ":bob!b@host PRIVMSG #belay :before the join",
        ":dave!d@host JOIN #belay",
        ":dave!d@host PRIVMSG #belay :hi from dave",
        ":bob!b@host MODE #belay +v dave",
        ":bob!b@host PRIVMSG #belay :voiced",
        ":bob!b@host TOPIC #belay :a new topic",
        ":bob!b@host PRIVMSG #belay :after the topic"
      )
      const got = yield* c.until((l) => l.command === "PRIVMSG" && l.params[1] === "after the topic", "15 seconds")
      expect(got.filter((l) => l.command !== "371").map((l) => `${l.command} ${l.params.at(-1)}`)).toEqual([
        "PRIVMSG before the join",
        "JOIN #belay",
        "PRIVMSG hi from dave",
        "MODE dave",
        "PRIVMSG voiced",
        "TOPIC a new topic",
        "PRIVMSG after the topic"
      ])

      // A peer's reply, as the upstream delivered it: the row the owner stored is read back on this node with the
      // client-only tags of its line (docs/contract.md "The IRC client listener"). `+draft/reply` would come from the
      // row's reply column alone; `+vendor/x` only from the line. A line with only the server's tags carries none.
      yield* upstream.send(
        "@msgid=up-1;account=bob :bob!b@host PRIVMSG #belay :the question",
        "@msgid=up-2;+draft/reply=up-1;+vendor/x=yes :carol!c@host PRIVMSG #belay :the answer"
      )
      const replies = yield* c.until((l) => l.command === "PRIVMSG" && l.params[1] === "the answer", "15 seconds")
      const clientTags = (text: string) => {
        const line = replies.find((l) => l.command === "PRIVMSG" && l.params[1] === text)
        expect(line, text).toBeDefined()
        return Object.entries(line?.tags ?? {}).filter(([key]) => key.startsWith("+"))
      }
      expect(clientTags("the question")).toEqual([])
      expect(clientTags("the answer")).toEqual([["+draft/reply", "up-1"], ["+vendor/x", "yes"]])

      // A labelled raw command of this client reaches the upstream through the owner under Belay's label, and the
      // answer comes back to it under its own.
      yield* c.send("@label=w1 WHOIS nobody")
      const asked = yield* upstream.waitFor("WHOIS nobody")
      expect(asked.tags.label).toMatch(/^bly/)
      yield* upstream.send(`@label=${asked.tags.label} :irc.fake.test 401 alice nobody :No such nick`)
      const answer = yield* c.next("401", "10 seconds")
      expect(answer.tags.label).toBe("w1")
      expect(answer.params[1]).toBe("nobody")
    }), 180_000)
})
