/**
 * The IRC client listener's commands and bounds end to end (real actor, fake IRC server, real database): the 10 KiB
 * SASL bound and the 417 of an overlong line (the connection goes on), `BOUNCER BIND` from a control connection,
 * ADDNETWORK/CHANGENETWORK/DELNETWORK through the web's checks (a refused attribute changes nothing; a change reaches
 * the `-notify` clients), an away message the member set left alone by auto-away, `znc.in/self-message`, and a client
 * that stops reading closed alone while the others keep every line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { NetworkControl } from "../../src/actors/NetworkApi.js"
import { MAX_CLIENT_LINE_BYTES } from "../../src/listener/LineReader.js"
import { SASL_PAYLOAD_BYTES } from "../../src/listener/Registration.js"
import { AUTO_AWAY_MESSAGE } from "../../src/listener/SessionHub.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { Networks } from "../../src/services/networks/Networks.js"
import { connectClient, saslPlain } from "../support/IrcTestClient.js"
import { batchEnd, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const NOTIFY = "batch soju.im/bouncer-networks soju.im/bouncer-networks-notify"

describe(`IRC client commands and bounds on ${describeMode}`, () => {
  it.scopedLive("SASL over 10 KiB fails once, at the bound, and may be retried; an overlong line gets 417; BIND; networks added, changed, removed", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { port, networkId } = app
      const accountId = Option.getOrThrow(yield* app.get(Accounts).findByName("alice")).id

      // A control connection (no network in the user name) that binds with BOUNCER BIND before CAP END.
      const c = yield* connectClient(port)
      yield* c.send("CAP LS 302", "NICK someone", "USER alice 0 * :Real", `CAP REQ :sasl ${NOTIFY}`)
      yield* c.next((l) => l.command === "CAP" && l.params[1] === "ACK")
      // An AUTHENTICATE payload past 10 KiB: read to its end, refused once with 904.
      const chunk = "A".repeat(400)
      const chunks = Math.ceil((SASL_PAYLOAD_BYTES * 4 / 3) / 400) + 2
      yield* c.send("AUTHENTICATE PLAIN")
      yield* c.next("AUTHENTICATE")
      yield* c.send(...Array.from({ length: chunks }, () => `AUTHENTICATE ${chunk}`), "AUTHENTICATE +", "PING after-sasl")
      const refused = yield* c.until("PONG")
      expect(refused.filter((l) => /^90\d$/.test(l.command)).map((l) => l.command)).toEqual(["904"])
      // One that never ends is refused once it passes the bound, not left to the registration timeout; the client
      // may start again with the mechanism while its chunks are still being dropped.
      yield* c.send("AUTHENTICATE PLAIN")
      yield* c.next("AUTHENTICATE")
      yield* c.send(...Array.from({ length: chunks }, () => `AUTHENTICATE ${chunk}`), "PING endless")
      const endless = yield* c.until("PONG")
      expect(endless.filter((l) => /^90\d$/.test(l.command)).map((l) => l.command)).toEqual(["904"])
      // Then a good payload signs in.
      yield* c.send("AUTHENTICATE PLAIN")
      yield* c.next("AUTHENTICATE")
      yield* c.send(`AUTHENTICATE ${saslPlain("alice", PASSWORD)}`)
      yield* c.next("903")
      // BIND to a network the account does not have: refused, registration goes on; then the right one.
      yield* c.send("BOUNCER BIND x")
      expect((yield* c.next("FAIL")).params.slice(0, 2)).toEqual(["BOUNCER", "INVALID_NETID"])
      yield* c.send(`BOUNCER BIND ${networkId}`, "CAP END")
      const burst = yield* c.until("366")
      expect(burst.filter((l) => l.command === "005").flatMap((l) => l.params)).toContain(`BOUNCER_NETID=${networkId}`)
      expect(burst.find((l) => l.command === "JOIN")?.params[0]).toBe("#belay")
      yield* c.send("BOUNCER BIND 1")
      expect((yield* c.next("FAIL")).params.slice(0, 3)).toEqual(["BOUNCER", "REGISTRATION_IS_COMPLETED", "BIND"])

      // An overlong line: 417, nothing upstream, and the connection goes on.
      yield* c.send(`PRIVMSG #belay :${"x".repeat(MAX_CLIENT_LINE_BYTES)}`, "PING after-long")
      const tooLong = yield* c.until("PONG")
      expect(tooLong.map((l) => l.command)).toContain("417")
      expect((yield* app.upstream.lines).some((l) => l.includes("xxxxxxxx"))).toBe(false)

      // A second client (control connection) hears of network changes.
      const watcher = yield* connectClient(port)
      yield* watcher.send(`PASS :alice:${PASSWORD}`, "CAP LS 302", "NICK w", "USER alice 0 * :W", `CAP REQ :${NOTIFY}`, "CAP END")
      yield* watcher.next("422")
      const networks = app.get(Networks)
      const listed = () => Effect.map(networks.listForAccount(accountId), (all) => all.map((n) => `${n.id}:${n.name}:${n.realname ?? ""}`))
      const before = yield* listed()

      // ADDNETWORK with an invalid port: FAIL INVALID_ATTRIBUTE, nothing added.
      yield* c.send("BOUNCER ADDNETWORK name=extra;host=127.0.0.1;port=99999")
      const badAdd = yield* c.next("FAIL")
      expect(badAdd.params.slice(0, 3)).toEqual(["BOUNCER", "INVALID_ATTRIBUTE", "ADDNETWORK"])
      yield* c.send("BOUNCER ADDNETWORK name=extra;host=irc;port=1;tls=0;nickname=bad\\snick!")
      expect((yield* c.next("FAIL")).params.slice(0, 3)).toEqual(["BOUNCER", "INVALID_ATTRIBUTE", "ADDNETWORK"])
      expect(yield* listed()).toEqual(before)

      // A valid one is added; both clients with -notify hear of it.
      yield* c.send("BOUNCER ADDNETWORK name=extra;host=127.0.0.1;port=1;tls=0;realname=Extra\\sone")
      const added = yield* c.next((l) => l.command === "BOUNCER" && l.params[0] === "ADDNETWORK")
      const extraId = added.params[1]!
      const heard = yield* watcher.next((l) => l.command === "BOUNCER" && l.params[0] === "NETWORK" && l.params[1] === extraId)
      expect(heard.params[2]).toContain("name=extra")
      expect(heard.params[2]).toContain("realname=Extra\\sone")
      expect((yield* listed()).length).toBe(before.length + 1)

      // CHANGENETWORK with an invalid nickname: refused, unchanged; a valid realname: changed and told.
      const afterAdd = yield* listed()
      yield* c.send(`BOUNCER CHANGENETWORK ${extraId} nickname=not\\sa\\snick`)
      expect((yield* c.next("FAIL")).params.slice(0, 3)).toEqual(["BOUNCER", "INVALID_ATTRIBUTE", "CHANGENETWORK"])
      yield* c.send(`BOUNCER CHANGENETWORK ${extraId} state=connected`)
      expect((yield* c.next("FAIL")).params.slice(0, 3)).toEqual(["BOUNCER", "READ_ONLY_ATTRIBUTE", "CHANGENETWORK"])
      expect(yield* listed()).toEqual(afterAdd)
      yield* c.send(`BOUNCER CHANGENETWORK ${extraId} realname=Renamed`)
      yield* c.next((l) => l.command === "BOUNCER" && l.params[0] === "CHANGENETWORK")
      const changed = yield* watcher.next((l) =>
        l.command === "BOUNCER" && l.params[1] === extraId && (l.params[2] ?? "").includes("realname=Renamed"))
      expect(changed.params[2]).toContain("name=extra")

      // DELNETWORK: removed, and told as `*`.
      yield* c.send(`BOUNCER DELNETWORK ${extraId}`)
      yield* c.next((l) => l.command === "BOUNCER" && l.params[0] === "DELNETWORK")
      yield* watcher.next((l) => l.command === "BOUNCER" && l.params[1] === extraId && l.params[2] === "*")
      expect(yield* listed()).toEqual(before)

      // LISTNETWORKS still answers in a batch with the remaining network.
      yield* watcher.send("BOUNCER LISTNETWORKS")
      const list = yield* watcher.until(batchEnd)
      expect(list.filter((l) => l.command === "BOUNCER").map((l) => l.params[1])).toEqual([String(networkId)])
    }), 90_000)

  it.scopedLive("an away message the member set is left alone by auto-away; znc.in/self-message", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { port, networkId, upstream } = app
      // Without echo-message: one client asks for znc.in/self-message, one for nothing.
      const selfMessage = yield* welcomedClient(port, "alice/fake@irssi", PASSWORD, "server-time znc.in/self-message")
      const plain = yield* welcomedClient(port, "alice/fake@hexchat", PASSWORD, "server-time")
      const sender = yield* welcomedClient(port, "alice/fake@goguma", PASSWORD)
      yield* sender.send("PRIVMSG carol :a private word", "PRIVMSG #belay :in the channel")
      yield* upstream.waitFor("PRIVMSG #belay :in the channel")
      const dm = yield* selfMessage.next((l) => l.command === "PRIVMSG")
      expect(dm.params).toEqual(["carol", "a private word"])
      expect(dm.source?.startsWith("alice")).toBe(true)
      // The client with neither gets the channel line, never the DM (it would file it under the wrong buffer).
      const seen = yield* plain.until((l) => l.command === "PRIVMSG")
      expect(seen.filter((l) => l.command === "PRIVMSG").map((l) => l.params)).toEqual([["#belay", "in the channel"]])

      // The member's own away message (set_away) stays when the last client leaves, and when one returns.
      yield* app.get(NetworkControl).away(networkId, Option.some("gone fishing")).pipe(Effect.orDie)
      yield* upstream.waitFor("AWAY :gone fishing")
      for (const c of [selfMessage, plain, sender]) {
        yield* c.send("QUIT")
        yield* c.closed()
      }
      const back = yield* welcomedClient(port, "alice/fake", PASSWORD)
      yield* back.send("PRIVMSG #belay :fence after the return")
      yield* upstream.waitFor("PRIVMSG #belay :fence after the return")
      const aways = (yield* upstream.lines).filter((l) => l.startsWith("AWAY"))
      expect(aways).toEqual(["AWAY :gone fishing"])
      const config = yield* app.get(Networks).config(networkId)
      expect(Option.map(config, (c) => c.awayMessage)).toEqual(Option.some("gone fishing"))
      expect(aways.some((l) => l.includes(AUTO_AWAY_MESSAGE))).toBe(false)
    }), 60_000)

  it.scopedLive("a client that stops reading is closed alone; the others get every line", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["away-notify"] })
      const { port, upstream } = app
      const fast = yield* welcomedClient(port, "alice/fake@fast", PASSWORD, "away-notify")
      const slow = yield* welcomedClient(port, "alice/fake@slow", PASSWORD, "away-notify")
      slow.socket.pause()
      // Lines that are not history (AWAY, away-notify) and go out at once: about 6 MB in all, more than the socket
      // buffers and the 1 MiB a client may leave unread. Sent in rounds that the fast client reads to the end (it
      // shares this process's event loop with Belay, so it reads only when Belay lets the loop turn).
      const rounds = 15
      const perRound = 1_000
      const count = rounds * perRound
      const padding = "z".repeat(380)
      const numbers: Array<number> = []
      for (let r = 0; r < rounds; r++) {
        yield* upstream.flood(perRound, (i) => `:user${i % 50}!u@host AWAY :${r * perRound + i} ${padding}`)
        const last = (r + 1) * perRound - 1
        const got = yield* fast.until((l) => l.command === "AWAY" && l.params[0]?.startsWith(`${last} `) === true, "30 seconds")
        for (const l of got) if (l.command === "AWAY") numbers.push(Number(l.params[0]!.split(" ")[0]))
      }
      expect(numbers).toEqual(Array.from({ length: count }, (_, i) => i))
      // The slow one was closed: what it had buffered, then the end, with fewer lines than were sent.
      slow.socket.resume()
      const slowGot = yield* slow.closed("30 seconds")
      expect(slowGot.filter((l) => l.command === "AWAY").length).toBeLessThan(count)
      // The fast one still hears the network.
      yield* upstream.send(":bob!b@host PRIVMSG #belay :after the flood")
      expect((yield* fast.next("PRIVMSG")).params[1]).toBe("after the flood")
    }), 120_000)
})
