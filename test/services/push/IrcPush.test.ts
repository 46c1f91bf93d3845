/**
 * The pure parts of Web Push to IRC clients (soju.im/webpush): the line a client is pushed, shaped by the capabilities
 * it registered with and cut to fit the record; the encryption, opened by the test's own RFC 8291 decoder (not the
 * code that encrypted it) with a body of exactly RECORD_BYTES whose record-size field says so, as Goguma checks; the
 * endpoint and key rules of `WEBPUSH REGISTER`; the `<keys>` parameter's message-tag syntax; and the `VAPID` ISUPPORT
 * token, Belay's own in place of an upstream bouncer's.
 */
import { describe, expect, it } from "@effect/vitest"
import { isupportTokens } from "../../../src/listener/IsupportReply.js"
import { parseKeys } from "../../../src/listener/WebPush.js"
import { parseLine } from "../../../src/irc/IrcLine.js"
import type { MessageRecord } from "../../../src/schema/SocketFrame.js"
import type { HeardMessage } from "../../../src/services/events/MemberEvents.js"
import { encryptLine, ircPushLine, MAX_LINE_BYTES, RECORD_BYTES } from "../../../src/services/push/IrcPush.js"
import { destinationOf, endpointProblem, subscriptionKeys } from "../../../src/services/push/PushEndpoint.js"
import * as LocalPushService from "../../http/push/LocalPushService.js"
import * as Crypto from "node:crypto"

const heard = (record: Partial<MessageRecord>, bufferKind: "channel" | "dm" = "channel"): HeardMessage => ({
  accountId: 1,
  bufferKind,
  selfNick: "alice",
  storedHere: true,
  record: {
    id: 42,
    networkId: 7,
    target: "#belay",
    time: "2026-12-06T14:00:00.123Z",
    kind: "privmsg",
    nick: "bob",
    text: "alice: hello",
    self: false,
    ...record
  }
})

const browserKeys = () => {
  const ecdh = Crypto.createECDH("prime256v1")
  ecdh.generateKeys()
  return { ecdh, publicKey: ecdh.getPublicKey(), auth: Crypto.randomBytes(16) }
}

describe("the line an IRC client is pushed", () => {
  it("carries time and msgid with the capabilities, the channel or the member's nick as target, ACTION as CTCP", () => {
    const both = ["server-time", "message-tags"]
    expect(ircPushLine(heard({}), both)).toBe("@time=2026-12-06T14:00:00.123Z;msgid=42 :bob PRIVMSG #belay :alice: hello")
    expect(ircPushLine(heard({ target: "bob", text: "psst" }, "dm"), both)).toBe(
      "@time=2026-12-06T14:00:00.123Z;msgid=42 :bob PRIVMSG alice psst"
    )
    expect(ircPushLine(heard({ kind: "action", text: "waves at alice" }), ["message-tags"])).toBe(
      "@msgid=42 :bob PRIVMSG #belay :\u0001ACTION waves at alice\u0001"
    )
    expect(ircPushLine(heard({ text: "line\r\nbreak" }), [])).toBe(":bob PRIVMSG #belay :line  break")
  })

  it("is cut at a character so that it fits the record, and still parses", () => {
    const long = "é".repeat(3000)
    const line = ircPushLine(heard({ text: `alice ${long}` }), ["server-time", "message-tags"])
    expect(Buffer.byteLength(line, "utf8")).toBeLessThanOrEqual(MAX_LINE_BYTES)
    expect(Buffer.byteLength(line, "utf8")).toBeGreaterThan(MAX_LINE_BYTES - 2)
    expect(line).not.toContain("\uFFFD")
    const parsed = parseLine(line)!
    expect(parsed.command).toBe("PRIVMSG")
    expect(parsed.params[1]!.startsWith("alice éé")).toBe(true)
  })
})

describe("the encrypted body", () => {
  it("opens with the subscription's keys, is RECORD_BYTES long and says so in its record size", () => {
    const keys = browserKeys()
    const subscription = { p256dh: keys.publicKey.toString("base64url"), auth: keys.auth.toString("base64url") }
    for (const line of ["@msgid=1 :bob PRIVMSG alice :hi", ircPushLine(heard({ text: "x".repeat(5000) }), [])]) {
      const body = encryptLine(subscription, line)
      expect(body.length).toBe(RECORD_BYTES)
      expect(body.readUInt32BE(16)).toBe(RECORD_BYTES)
      expect(body[20]).toBe(65)
      expect(LocalPushService.decrypt(keys, body)).toBe(line)
    }
    // Another subscription's keys do not open it.
    expect(() => LocalPushService.decrypt(browserKeys(), encryptLine(subscription, "secret"))).toThrow()
  })
})

describe("WEBPUSH REGISTER's parameters", () => {
  it("endpoints: https (http only when allowed), bounded, no user, fragment, space or control character", () => {
    expect(endpointProblem("https://push.example/abc", false)).toBeUndefined()
    expect(endpointProblem("http://push.example/abc", false)).toMatch(/https/)
    expect(endpointProblem("http://push.example/abc", true)).toBeUndefined()
    expect(endpointProblem("ftp://push.example/abc", true)).toMatch(/https/)
    expect(endpointProblem("not a url", false)).toMatch(/spaces/)
    expect(endpointProblem("nota-url", false)).toMatch(/URL/)
    expect(endpointProblem("https://u:p@push.example/", false)).toMatch(/user/)
    expect(endpointProblem("https://push.example/#x", false)).toMatch(/fragment/)
    expect(endpointProblem("https://push.example/\tx", false)).toMatch(/control/)
    expect(endpointProblem(`https://push.example/${"a".repeat(2048)}`, false)).toMatch(/2048/)
    expect(endpointProblem("", false)).toMatch(/2048/)
    expect(destinationOf("https://push.example/abc")).toEqual({ host: "push.example", port: 443 })
    expect(destinationOf("http://10.0.0.1:8080/abc")).toEqual({ host: "10.0.0.1", port: 8080 })
  })

  it("keys: a P-256 point on the curve and a 16-byte secret, base64url padded or not", () => {
    const keys = browserKeys()
    const p256dh = keys.publicKey.toString("base64url")
    const auth = keys.auth.toString("base64url")
    expect(subscriptionKeys(p256dh, auth)).toEqual({ p256dh, auth })
    // Dart's base64Url (Goguma) pads; the standard alphabet's + and / are not base64url.
    expect(subscriptionKeys(`${p256dh}=`, `${auth}==`)).toEqual({ p256dh, auth })
    expect(subscriptionKeys(`+${p256dh.slice(1)}`, auth)).toMatchObject({ problem: expect.stringMatching(/p256dh/) })
    expect(subscriptionKeys("AAAA", auth)).toMatchObject({ problem: expect.stringMatching(/p256dh/) })
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString("base64url")
    expect(subscriptionKeys(offCurve, auth)).toMatchObject({ problem: expect.stringMatching(/p256dh/) })
    expect(subscriptionKeys(p256dh, "c2hvcnQ")).toMatchObject({ problem: expect.stringMatching(/auth/) })
    expect(subscriptionKeys(p256dh, "not base64url!")).toMatchObject({ problem: expect.stringMatching(/auth/) })
  })

  it("<keys> is message-tag syntax, values unescaped", () => {
    expect([...parseKeys("p256dh=BCVx;auth=BTBZ")]).toEqual([["p256dh", "BCVx"], ["auth", "BTBZ"]])
    expect([...parseKeys("auth=a\\sb;;=x;novalue;p256dh=c==")]).toEqual([["auth", "a b"], ["p256dh", "c=="]])
    expect(parseKeys("").size).toBe(0)
  })
})

describe("the VAPID ISUPPORT token", () => {
  it("is Belay's key, only when given (a client with soju.im/webpush), never an upstream's", () => {
    const upstream = { isupport: ["NETWORK=Fake", "VAPID=UPSTREAMKEY", "CASEMAPPING=rfc1459"], caps: ["message-tags"] }
    const withKey = isupportTokens(3, upstream, undefined, "BELAYKEY")
    expect(withKey).toContain("VAPID=BELAYKEY")
    expect(withKey).toContain("NETWORK=Fake")
    expect(withKey.filter((t) => t.startsWith("VAPID="))).toEqual(["VAPID=BELAYKEY"])
    expect(isupportTokens(3, upstream).some((t) => t.startsWith("VAPID="))).toBe(false)
    // Before registration and on a control connection too: the key is the deployment's, not the network's.
    expect(isupportTokens(undefined, undefined, undefined, "BELAYKEY")).toContain("VAPID=BELAYKEY")
    expect(isupportTokens(null, undefined, undefined, "BELAYKEY")).toContain("VAPID=BELAYKEY")
  })
})
