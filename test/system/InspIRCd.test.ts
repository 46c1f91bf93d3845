/**
 * System test: message tags end to end against a real IRCv3 server (InspIRCd 3 with its ircv3 modules), through a real
 * `belay serve` (docs/contract.md "The IRC client listener"). A member's network on InspIRCd joined to a channel; a peer
 * connected directly to InspIRCd with message-tags; an IRC client signed in to Belay's listener with message-tags.
 *
 * Proves: the peer's PRIVMSG carries InspIRCd's msgid, and Belay stores it and shows it as that msgid — to MCP
 * (`recent_messages`), to the listener client live and in CHATHISTORY (where a `msgid=` reference may name it); the
 * listener client's `+draft/reply` PRIVMSG and `+draft/react` TAGMSG reach the peer with their tags; the peer's
 * `+typing` TAGMSG reaches the listener client, and its PRIVMSG's client tags too; a WHOX WHO is answered by 354
 * replies with the token and fields asked for, their flags (every prefix upstream, InspIRCd's multi-prefix) narrowed
 * to the highest for a listener client without multi-prefix and whole for one with it; a DM to the member's own nick,
 * which InspIRCd (echo-message on Belay's upstream connection) sends back twice, the delivery and the echo, is stored
 * once (`recent_messages`), reaches the sending client with echo-message twice (its labelled echo, then the delivery)
 * and a client without echo-message once (docs/contract.md "Echoes").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startBelay } from "../support/BelayProcess.js"
import { eventually } from "../support/Eventually.js"
import { INSPIRCD, inspircd, tagPeer } from "../support/InspIRCd.js"
import { connectClient, type ClientLine } from "../support/IrcTestClient.js"
import { testEnvironment } from "../support/TestDatabase.js"

const CHANNEL = "#tags"
const PASSWORD = "correct horse battery"
const WAIT = "10 seconds"

interface McpMessage {
  readonly id: number
  readonly nick: string
  readonly text: string
  readonly msgid?: string
}

const callTool = (url: string, token: string, name: string, args: Record<string, unknown>) =>
  Effect.promise(async () => {
    const res = await fetch(`${url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })
    })
    const json = await res.json() as { result?: { isError?: boolean; structuredContent?: unknown } }
    return json.result
  })

const inChannel = (command: string, from: string) => (l: ClientLine) =>
  l.command === command && l.params[0] === CHANNEL && (l.source ?? "").split("!")[0] === from

describe("message tags through Belay on InspIRCd", () => {
  it.scopedLive.skipIf(INSPIRCD.skip)(
    "the upstream msgid is stored and shown; replies, reactions and typing cross both ways with their tags",
    () =>
      Effect.gen(function*() {
        const listenerPort = yield* freePort
        const env = yield* testEnvironment({ BELAY_IRC_LISTEN: `127.0.0.1:${listenerPort}` })
        const [server, belay] = yield* Effect.all([inspircd, startBelay(env)], { concurrency: 2 })
        const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
        expect((yield* cli(["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
        // The network and a token at once (each `belay` command is a process start); the listener client's JOIN below
        // is the sign that the network is connected.
        const [added, minted] = yield* Effect.all([
          cli(["network", "add", "alice", "--name", "inspircd", "--host", "127.0.0.1", "--port", String(server.port),
            "--nick", "alice", "--join", CHANNEL]),
          cli(["token", "add", "alice", "--name", "system", "--scope", "read-write"])
        ], { concurrency: 2 })
        expect(added.code).toBe(0)
        expect(minted.code).toBe(0)
        const networkId = Number(added.stdout.trim())
        const token = minted.stdout.trim()

        // The peer, straight on InspIRCd; echo-message shows it the msgid InspIRCd gives its own line.
        const bob = yield* tagPeer(server.port, "bob", ["message-tags", "server-time", "echo-message"])
        yield* bob.send(`JOIN ${CHANNEL}`)
        yield* bob.next((l) => l.command === "366")

        // The member's IRC client on Belay's listener, with tags.
        const client = yield* connectClient(listenerPort)
        yield* client.send("CAP LS 302",
          "CAP REQ :message-tags server-time batch echo-message draft/chathistory labeled-response",
          `PASS :alice/inspircd:${PASSWORD}`, "NICK alice", "USER alice 0 * :alice", "CAP END")
        yield* client.next("001", WAIT)
        yield* client.next((l) => l.command === "JOIN" && l.params[0] === CHANNEL, WAIT)
        yield* client.next((l) => l.command === "366", WAIT)

        // Each feature is checked softly, so that one run names every one that fails.
        // 1. The peer speaks: InspIRCd's msgid is what Belay shows, live, to MCP and in CHATHISTORY.
        yield* bob.send(`PRIVMSG ${CHANNEL} :hello with a msgid`)
        const echoed = yield* bob.next(inChannel("PRIVMSG", "bob"))
        const upstreamMsgid = echoed.tags["msgid"]
        expect(upstreamMsgid, "InspIRCd gives its lines a msgid").toMatch(/^\S+$/)
        const live = yield* client.next(inChannel("PRIVMSG", "bob"), WAIT)
        expect(live.params[1]).toBe("hello with a msgid")
        expect.soft(live.tags["msgid"], "the live line's msgid is the upstream's").toBe(upstreamMsgid)

        const recent = yield* eventually("the line in recent_messages",
          callTool(belay.url, token, "recent_messages", { networkId, target: CHANNEL, limit: 10 }), (r) =>
            ((r?.structuredContent as { messages?: ReadonlyArray<McpMessage> } | undefined)?.messages ?? [])
              .some((m) => m.text === "hello with a msgid"), WAIT)
        const stored = (recent?.structuredContent as { messages: ReadonlyArray<McpMessage> }).messages
          .find((m) => m.text === "hello with a msgid")!
        expect.soft(stored.msgid, "MCP shows the upstream msgid").toBe(upstreamMsgid)

        yield* client.send("CHATHISTORY LATEST #tags * 10")
        const history = yield* client.until((l) => l.command === "BATCH" && l.params[0]?.startsWith("-") === true, WAIT)
        const replayed = history.find((l) => l.command === "PRIVMSG" && l.params[1] === "hello with a msgid")
        expect.soft(replayed?.tags["msgid"], "CHATHISTORY shows the upstream msgid").toBe(upstreamMsgid)
        yield* client.send(`CHATHISTORY AROUND #tags msgid=${upstreamMsgid} 1`)
        const around = yield* client.until((l) => l.command === "BATCH" && l.params[0]?.startsWith("-") === true, WAIT)
        expect.soft(around.filter((l) => l.command === "PRIVMSG").map((l) => l.params[1]),
          "a msgid= reference may name the upstream msgid").toEqual(["hello with a msgid"])

        // 2. The member replies and reacts from the IRC client: the peer gets the client tags.
        yield* client.send(`@+draft/reply=${upstreamMsgid} PRIVMSG ${CHANNEL} :a reply`)
        const reply = yield* bob.next(inChannel("PRIVMSG", "alice"))
        expect(reply.params[1]).toBe("a reply")
        expect.soft(reply.tags["+draft/reply"], "the reply's client tag upstream").toBe(upstreamMsgid)
        yield* client.send(`@+draft/react=👍;+draft/reply=${upstreamMsgid} TAGMSG ${CHANNEL}`)
        const reaction = yield* bob.next(inChannel("TAGMSG", "alice"))
        expect(reaction.tags["+draft/react"]).toBe("👍")
        expect(reaction.tags["+draft/reply"]).toBe(upstreamMsgid)

        // 3. The peer types: the listener client sees it.
        yield* bob.send(`@+typing=active TAGMSG ${CHANNEL}`)
        const typing = yield* client.next(inChannel("TAGMSG", "bob"), WAIT)
        expect(typing.tags["+typing"]).toBe("active")

        // 4. The peer replies with client tags: the listener client gets the PRIVMSG with them (live).
        yield* bob.send(`@+draft/reply=${upstreamMsgid};+example.org/mood=calm PRIVMSG ${CHANNEL} :bob replies`)
        const tagged = yield* client.next((l) => inChannel("PRIVMSG", "bob")(l) && l.params[1] === "bob replies", WAIT)
        expect.soft(tagged.tags["+draft/reply"], "the peer's reply tag").toBe(upstreamMsgid)
        expect.soft(tagged.tags["+example.org/mood"], "the peer's other client tag").toBe("calm")

        // 5. WHOX (InspIRCd has it): the 354 replies come back to the asker with its label, the fields asked for.
        yield* client.send(`@label=who1 WHO ${CHANNEL} %tnf,77`)
        const who = yield* client.until((l) => l.command === "315" || (l.command === "BATCH" && l.params[0]?.startsWith("-") === true), WAIT)
        const whox = who.filter((l) => l.command === "354")
        expect.soft(whox.map((l) => l.params.slice(1, 3)).sort(), "354 token and nick per member")
          .toEqual([["77", "alice"], ["77", "bob"]])
        expect.soft(whox.every((l) => /^[HG]/.test(l.params[3] ?? "")), "the flags field").toBe(true)

        // 5b. multi-prefix (InspIRCd's namesx): Belay's upstream gets every prefix in a 354's flags; a client without
        // multi-prefix gets the highest alone, one with it all of them (step 6).
        yield* client.send("JOIN #whox")
        yield* client.next((l) => l.command === "366" && l.params[1] === "#whox", WAIT)
        yield* client.send("MODE #whox +v alice")
        yield* client.next((l) => l.command === "MODE" && l.params[0] === "#whox" && l.params[1] === "+v", WAIT)
        yield* client.send("@label=who2 WHO #whox %tnf,78")
        const narrowed = yield* client.until((l) => l.command === "BATCH" && l.params[0]?.startsWith("-") === true, WAIT)
        expect.soft(narrowed.filter((l) => l.command === "354").map((l) => l.params.slice(1)),
          "the flags narrowed for a client without multi-prefix").toEqual([["78", "alice", "H@"]])

        // 6. A DM to the member's own nick from the listener client, with a second client without echo-message (but with
        // multi-prefix, for 5b).
        const plain = yield* connectClient(listenerPort)
        yield* plain.send("CAP LS 302", "CAP REQ :server-time multi-prefix", `PASS :alice/inspircd@plain:${PASSWORD}`,
          "NICK alice", "USER alice 0 * :alice", "CAP END")
        yield* plain.next("001", WAIT)
        yield* plain.next((l) => l.command === "366" && l.params[1] === "#whox", WAIT)
        yield* plain.send("WHO #whox %tnf,79")
        const whole = yield* plain.until((l) => l.command === "315", WAIT)
        expect.soft(whole.filter((l) => l.command === "354").map((l) => l.params.slice(1)),
          "every prefix for a client with multi-prefix").toEqual([["79", "alice", "H@+"]])
        const note = "a note to self"
        yield* client.send(`@label=self1 PRIVMSG alice :${note}`)
        const echo = yield* client.next((l) => l.command === "PRIVMSG" && l.params[1] === note, WAIT)
        expect.soft([echo.params[0], echo.tags["label"]], "the sender's first copy, its labelled echo").toEqual(["alice", "self1"])
        // The fence comes after both copies: InspIRCd sends them together, and Belay keeps the server's order.
        yield* bob.send(`PRIVMSG ${CHANNEL} :fence`)
        const fence = (l: ClientLine) => inChannel("PRIVMSG", "bob")(l) && l.params[1] === "fence"
        const sent = (yield* client.until(fence, WAIT)).filter((l) => l.command === "PRIVMSG" && l.params[1] === note)
        const plainSaw = (yield* plain.until(fence, WAIT)).filter((l) => l.command === "PRIVMSG" && l.params[1] === note)
        const dm = yield* callTool(belay.url, token, "recent_messages", { networkId, target: "alice", limit: 10 })
        const rows = ((dm?.structuredContent as { messages?: ReadonlyArray<McpMessage> } | undefined)?.messages ?? [])
          .filter((m) => m.text === note)
        expect.soft(rows.length, "the self-DM is stored once").toBe(1)
        // The echo was read above: the sender then gets the delivery, without the label.
        expect.soft(sent.map((l) => [l.params[0], l.tags["label"]]), "the sender's second copy, the delivery")
          .toEqual([["alice", undefined]])
        expect.soft(plainSaw.map((l) => l.params[0]), "a client without echo-message gets it once").toEqual(["alice"])
      }),
    { timeout: 90_000 }
  )
})
