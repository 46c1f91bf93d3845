/**
 * The listener's pure parts, as tables: the sign-in name and PASS forms, line splitting with its bound, the CAP state
 * machine, CHATHISTORY parsing (to requests or FAIL codes) and its targets, and rendering (stored rows and relayed
 * upstream lines per capability, a WHOX 354's flags by the request it answers).
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { ALL_PASSTHROUGH, initialCapState, offeredCaps, onCap, passthroughChange } from "../../src/listener/CapNegotiation.js"
import { isHistoryTarget, parseChatHistory } from "../../src/listener/ChatHistoryRequest.js"
import { LineReader, MAX_CLIENT_LINE_BYTES } from "../../src/listener/LineReader.js"
import { arrivesStored, type ClientView, relayedLine, storedLine, whoxRequest } from "../../src/listener/MessageLines.js"
import { parseModeChanges } from "../../src/listener/ModeRequest.js"
import { parsePass, parseSignInName } from "../../src/listener/SignInName.js"
import { applyISupport, defaultISupport } from "../../src/irc/ISupport.js"
import type { StoredMessage } from "../../src/services/history/MessageHistory.js"

describe("sign-in names", () => {
  it.each([
    ["alice", { account: "alice", network: null, client: null }],
    ["alice/libera", { account: "alice", network: "libera", client: null }],
    ["alice@phone", { account: "alice", network: null, client: "phone" }],
    ["alice/libera@phone", { account: "alice", network: "libera", client: "phone" }],
    ["alice@phone/libera", { account: "alice", network: "libera", client: "phone" }],
    ["alice/12", { account: "alice", network: "12", client: null }]
  ])("%s", (raw, expected) => expect(parseSignInName(raw)).toEqual(expected))

  it.each(["", "/libera", "alice//x", "alice/a/b", "alice@a@b", "al ice", "alice@bad client"])("refuses %j", (raw) =>
    expect(parseSignInName(raw)).toBeUndefined())

  it.each([
    ["alice/libera@w:secret:with:colons", "alice", "secret:with:colons"],
    ["just a password", undefined, "just a password"],
    [":leading", undefined, ":leading"]
  ])("PASS %j", (pass, account, secret) => {
    const parts = parsePass(pass)
    expect(parts.name?.account).toBe(account)
    expect(parts.secret).toBe(secret)
  })
})

describe("line reader", () => {
  it("splits CR-LF and LF, keeps a partial line, skips empty ones", () => {
    const r = new LineReader()
    expect(r.push(Buffer.from("NICK a\r\nUSER b\n\r\nPI"))).toEqual([{ _tag: "Line", line: "NICK a" }, { _tag: "Line", line: "USER b" }])
    expect(r.push(Buffer.from("NG x\r\n"))).toEqual([{ _tag: "Line", line: "PING x" }])
  })
  it("drops a line over the bound whole, once, and goes on after its end", () => {
    const r = new LineReader()
    const first = r.push(Buffer.alloc(MAX_CLIENT_LINE_BYTES + 10, 0x61))
    expect(first).toEqual([{ _tag: "TooLong" }])
    expect(r.push(Buffer.alloc(5000, 0x61))).toEqual([])
    expect(r.push(Buffer.from("aaa\r\nPING ok\r\n"))).toEqual([{ _tag: "Line", line: "PING ok" }])
  })
})

describe("CAP negotiation", () => {
  const offered = offeredCaps(undefined)
  const ctx = { nick: "*", registered: false, offered }
  it("LS 302 lists values, implies cap-notify and holds registration until END", () => {
    const ls = onCap(initialCapState, ["LS", "302"], ctx)
    expect(ls.state.negotiating).toBe(true)
    expect(ls.state.enabled.has("cap-notify")).toBe(true)
    const words = ls.replies.flatMap((r) => (r.params ?? []).at(-1)!.split(" "))
    expect(words).toContain("sasl=PLAIN")
    expect(words).toContain("draft/chathistory")
    expect(onCap(ls.state, ["END"], ctx).state.negotiating).toBe(false)
  })
  it("REQ is acknowledged or refused whole", () => {
    const ack = onCap(initialCapState, ["REQ", "server-time batch"], ctx)
    expect(ack.replies[0]?.params).toEqual(["*", "ACK", "server-time batch"])
    expect([...ack.state.enabled]).toEqual(["server-time", "batch"])
    const nak = onCap(ack.state, ["REQ", "echo-message unknown-cap"], ctx)
    expect(nak.replies[0]?.params).toEqual(["*", "NAK", "echo-message unknown-cap"])
    expect(nak.state.enabled).toEqual(ack.state.enabled)
    const off = onCap(ack.state, ["REQ", "-batch"], ctx)
    expect([...off.state.enabled]).toEqual(["server-time"])
  })
  it("an unknown subcommand is 410", () => expect(onCap(initialCapState, ["FOO"], ctx).replies[0]?.command).toBe("410"))
  it("passthrough caps the upstream lacks are withdrawn with CAP DEL under cap-notify only", () => {
    const state = { negotiating: false, version: 302, enabled: new Set(["cap-notify", "away-notify", "chghost", "batch"]) }
    const out = passthroughChange(state, ALL_PASSTHROUGH, new Set(["away-notify"]), "alice")
    expect(out.replies.map((r) => r.params?.[1])).toEqual(["DEL"])
    expect(out.replies[0]?.params?.[2]).toContain("chghost")
    expect(out.replies[0]?.params?.[2]).not.toContain("away-notify")
    expect(out.state.enabled.has("away-notify")).toBe(true)
    expect(out.state.enabled.has("chghost")).toBe(false)
    expect([...out.offered]).toEqual(["away-notify"])
    const quiet = passthroughChange({ ...state, enabled: new Set(["extended-join"]) }, ALL_PASSTHROUGH, new Set(), "alice")
  })
  it("of the caps withdrawn, only those the client enabled are announced in CAP DEL", () => {
    const state = { negotiating: false, version: 302, enabled: new Set(["cap-notify", "away-notify", "extended-join", "batch"]) }
    const out = passthroughChange(state, ALL_PASSTHROUGH, new Set(["away-notify"]), "alice")
    expect(out.replies.map((r) => r.params)).toEqual([["alice", "DEL", "extended-join"]])
    expect([...out.state.enabled]).toEqual(["cap-notify", "away-notify", "batch"])
    // None of the missing ones enabled: nothing to announce.
    expect(passthroughChange({ ...state, enabled: new Set(["cap-notify", "batch"]) }, ALL_PASSTHROUGH, new Set(), "alice").replies)
      .toEqual([])
    const quiet = passthroughChange({ ...state, enabled: new Set(["extended-join"]) }, ALL_PASSTHROUGH, new Set(), "alice")
    expect(quiet.replies).toEqual([])
    expect(quiet.state.enabled.has("extended-join")).toBe(true)
    expect(quiet.offered.size).toBe(0)
  })
  it("an upstream that gains and loses caps (a reconnect): CAP NEW and CAP DEL of the difference only", () => {
    const state = { negotiating: false, version: 302, enabled: new Set(["cap-notify", "away-notify"]) }
    const out = passthroughChange(state, new Set(["away-notify", "setname"]), new Set(["setname", "chghost", "sasl"]), "alice")
    expect(out.replies.map((r) => r.params)).toEqual([["alice", "NEW", "chghost"], ["alice", "DEL", "away-notify"]])
    expect(out.state.enabled.has("away-notify")).toBe(false)
    const same = passthroughChange(out.state, out.offered, new Set(["setname", "chghost"]), "alice")
    expect(same.replies).toEqual([])
  })
})

describe("CHATHISTORY parsing", () => {
  it.each([
    [["LATEST", "#c", "*", "50"], { _tag: "Latest", target: "#c", ref: "*", limit: 50 }],
    [["BEFORE", "#c", "msgid=42", "5000"], { _tag: "Before", target: "#c", ref: { _tag: "Msgid", msgid: "42" }, limit: 1000 }],
    [["AFTER", "#c", "msgid=01HX-upstream", "10"], { _tag: "After", target: "#c", ref: { _tag: "Msgid", msgid: "01HX-upstream" }, limit: 10 }],
    [["after", "nick", "timestamp=2024-01-02T03:04:05.678Z", "10"], {
      _tag: "After",
      target: "nick",
      ref: { _tag: "Time", time: new Date("2024-01-02T03:04:05.678Z") },
      limit: 10
    }],
    [["BETWEEN", "#c", "msgid=9", "msgid=3", "10"], {
      _tag: "Between",
      target: "#c",
      from: { _tag: "Msgid", msgid: "9" },
      to: { _tag: "Msgid", msgid: "3" },
      limit: 10
    }],
    [["TARGETS", "timestamp=2024-01-01T00:00:00Z", "timestamp=2024-02-01T00:00:00Z", "5"], {
      _tag: "Targets",
      from: new Date("2024-01-01T00:00:00Z"),
      to: new Date("2024-02-01T00:00:00Z"),
      limit: 5
    }]
  ])("%j", (params, expected) => expect(parseChatHistory(params)).toEqual(expected))

  it.each([
    [["LATEST", "#c", "*", "many"], "INVALID_PARAMS"],
    [["BEFORE", "#c", "msgid=", "10"], "INVALID_PARAMS"],
    [["BEFORE", "#c", "msgid=a\u0001b", "10"], "INVALID_PARAMS"],
    [["BEFORE", "#c", `msgid=${"m".repeat(257)}`, "10"], "INVALID_PARAMS"],
    [["AROUND", "#c", "timestamp=yesterday", "10"], "INVALID_PARAMS"],
    [["TARGETS", "msgid=1", "msgid=2", "10"], "INVALID_PARAMS"],
    [["BEFORE", "#c"], "NEED_MORE_PARAMS"],
    [["PLAY", "#c"], "UNKNOWN_COMMAND"]
  ])("%j fails with %s", (params, code) => expect(parseChatHistory(params)).toMatchObject({ code }))
})

describe("CHATHISTORY targets", () => {
  it.each([
    ["a channel", "#belay", true],
    ["another CHANTYPES channel", "&local", true],
    ["a nick", "bob", true],
    ["a nick with specials", "[bob]_`|^{}\\", true],
    ["a mask", "bob!*@*", false],
    ["a nick with @", "bob@host", false],
    ["a list", "bob,carol", false],
    ["a channel list", "#a,#b", false],
    ["a nick starting with a digit", "1bob", false],
    ["a $ mask", "$*", false],
    ["a control character", "bo\u0007b", false],
    ["empty", "", false],
    ["too long", "b".repeat(201), false]
  ])("%s", (_name, target, valid) => expect(isHistoryTarget("#&", target)).toBe(valid))
  it("accepts no name a buffer could not have, whatever the client sends", () =>
    fc.assert(fc.property(fc.string({ maxLength: 300, unit: "binary" }), (target) => {
      if (!isHistoryTarget("#&", target)) return
      expect(target.length).toBeLessThanOrEqual(200)
      expect(target).not.toMatch(/[\s,\p{Cc}]/u)
    }), { seed: 353, numRuns: 2000 }))
})

describe("rendering", () => {
  const view = (caps: ReadonlyArray<string>): ClientView => ({
    caps: new Set(caps),
    selfNick: "alice",
    channelTypes: "#&",
    prefixSymbols: "@+"
  })
  const row = (patch: Partial<StoredMessage>): StoredMessage => ({
    id: 7,
    networkId: 1,
    target: "#c",
    time: new Date("2024-05-06T07:08:09.123Z"),
    kind: "privmsg",
    nick: "bob",
    text: "hi",
    numeric: null,
    self: false,
    encryption: "plain",
    ...patch
  })
  it.each([
    ["channel message, no caps", row({}), [], ":bob PRIVMSG #c hi"],
    ["with server-time and message-tags", row({}), ["server-time", "message-tags"], "@time=2024-05-06T07:08:09.123Z;msgid=7 :bob PRIVMSG #c hi"],
    ["an action", row({ kind: "action", text: "waves" }), [], ":bob PRIVMSG #c :\u0001ACTION waves\u0001"],
    ["a notice in a DM", row({ kind: "notice", target: "bob" }), [], ":bob NOTICE alice hi"],
    ["own DM", row({ target: "bob", self: true, nick: "alice" }), [], ":alice PRIVMSG bob hi"],
    ["server buffer", row({ target: ":server:1", nick: "irc.test", kind: "notice" }), [], ":irc.test NOTICE alice hi"]
  ])("%s", (_name, r, caps, expected) => expect(storedLine(r, view(caps))).toBe(expected))

  it.each([
    ["PRIVMSG comes stored, never relayed", ":bob PRIVMSG #c :hi", [], undefined],
    ["registration numerics are not relayed", ":irc 001 alice :Welcome", [], undefined],
    ["JOIN keeps its source and gets a time", ":dave!d@h JOIN #c", ["server-time"], "@time=1970-01-01T00:00:01.000Z :dave!d@h JOIN #c"],
    ["extended JOIN narrowed", ":dave!d@h JOIN #c acct :Dave", [], ":dave!d@h JOIN #c"],
    ["AWAY needs away-notify", ":dave!d@h AWAY :gone", [], undefined],
    ["AWAY with away-notify", ":dave!d@h AWAY :gone", ["away-notify"], ":dave!d@h AWAY gone"],
    ["tags narrowed", "@account=dave;+typing=active;time=2020-01-01T00:00:00.000Z :dave!d@h JOIN #c", [], ":dave!d@h JOIN #c"],
    ["multi-prefix narrowed", ":irc 353 alice = #c :@+bob +carol", [], ":irc 353 alice = #c :@bob +carol"],
    ["multi-prefix kept", ":irc 353 alice = #c :@+bob", ["multi-prefix"], ":irc 353 alice = #c @+bob"],
    ["userhost-in-names narrowed", ":irc 353 alice = #c :@+bob!b@h carol!c@h", [], ":irc 353 alice = #c :@bob carol"],
    ["userhost-in-names narrowed, multi-prefix kept", ":irc 353 alice = #c :@+bob!b@h", ["multi-prefix"], ":irc 353 alice = #c @+bob"],
    ["userhost-in-names kept", ":irc 353 alice = #c :@+bob!b@h", ["userhost-in-names"], ":irc 353 alice = #c @bob!b@h"],
    ["WHO flags narrowed", ":irc 352 alice #c b h irc bob H*@+ :0 Bob", [], ":irc 352 alice #c b h irc bob H*@ :0 Bob"],
    ["WHO flags kept", ":irc 352 alice #c b h irc bob G@+ :0 Bob", ["multi-prefix"], ":irc 352 alice #c b h irc bob G@+ :0 Bob"],
    ["another's INVITE needs invite-notify", ":bob!b@h INVITE carol #c", [], undefined],
    ["an INVITE to the member", ":bob!b@h INVITE alice #c", [], ":bob!b@h INVITE alice #c"]
  ])("%s", (_name, raw, caps, expected) => expect(relayedLine(raw, 1000, view(caps))).toBe(expected))
})

describe("WHOX requests and their 354 flags", () => {
  it.each([
    ["%tcnf,5", { fields: "tcnf", token: true }],
    ["%nf", { fields: "nf", token: false }],
    ["%f", { fields: "f", token: false }],
    ["%cuhsnfdlaor,123", { fields: "cuhsnfdlaor", token: true }],
    // Asked in any order, each once: the reply's order is the spec's.
    ["%fnnc", { fields: "cnf", token: false }],
    // Non-standard flags before the percent sign.
    ["o%nf", { fields: "nf", token: false }],
    ["%tnf", { fields: "tnf", token: false }],
    ["%tnf,", { fields: "tnf", token: false }],
    ["%nfS", undefined],
    ["%NF", undefined],
    ["%", undefined],
    ["%,5", undefined],
    ["o", undefined]
  ])("WHO #c %s", (arg, expected) => expect(whoxRequest(["#c", arg])).toEqual(expected))
  it("a WHO without a second param is no WHOX request", () => expect(whoxRequest(["#c"])).toBeUndefined())

  const view = (caps: ReadonlyArray<string>): ClientView => ({
    caps: new Set(caps),
    selfNick: "alice",
    channelTypes: "#&",
    prefixSymbols: "~@+"
  })
  const relayed = (raw: string, arg: string | undefined, caps: ReadonlyArray<string>) => {
    const whox = arg === undefined ? undefined : whoxRequest(["#c", arg])
    return relayedLine(raw, 1000, view(caps), { answer: true, ...(whox !== undefined ? { whox } : {}) })
  }
  it.each([
    ["%tcnf,5", "%tcnf,5", ":irc 354 alice 5 #c bob H*~@+", ":irc 354 alice 5 #c bob H*~"],
    ["%tcnf, the server making up a token (InspIRCd: 0)", "%tcnf", ":irc 354 alice 0 #c bob H@+", ":irc 354 alice 0 #c bob H@"],
    ["%tcnf, the server sending no token", "%tcnf", ":irc 354 alice #c bob G@+", ":irc 354 alice #c bob G@"],
    ["%nf", "%nf", ":irc 354 alice bob H@+", ":irc 354 alice bob H@"],
    ["%f", "%f", ":irc 354 alice G@+", ":irc 354 alice G@"],
    [
      "%cuhsnfdlaor,123",
      "%cuhsnfdlaor,123",
      ":irc 354 alice #c b h irc bob H@+ 0 5 acct n/a :Bob +@",
      ":irc 354 alice #c b h irc bob H@ 0 5 acct n/a :Bob +@"
    ],
    ["a reply without f", "%nr", ":irc 354 alice bob :@+ real name", ":irc 354 alice bob :@+ real name"],
    ["a reply of other fields than asked", "%nf", ":irc 354 alice #c bob H@+", ":irc 354 alice #c bob H@+"],
    ["a non-standard field", "%nfS", ":irc 354 alice bob H@+ 001", ":irc 354 alice bob H@+ 001"],
    ["an unknown request", undefined, ":irc 354 alice bob H@+", ":irc 354 alice bob H@+"]
  ])("without multi-prefix, %s", (_name, arg, raw, expected) => expect(relayed(raw, arg, [])).toBe(expected))
  it.each([
    ["%tcnf,5", ":irc 354 alice 5 #c bob H*~@+"],
    ["%nf", ":irc 354 alice bob H@+"],
    ["%f", ":irc 354 alice G@+"],
    ["%cuhsnfdlaor,123", ":irc 354 alice #c b h irc bob H@+ 0 5 acct n/a Bob"]
  ])("with multi-prefix, %s is relayed as sent", (arg, raw) => expect(relayed(raw, arg, ["multi-prefix"])).toBe(raw))
})

describe("feed lines that arrive stored", () => {
  it.each([
    [":bob!b@h PRIVMSG #c :hi", true],
    ["@time=2024-01-01T00:00:00.000Z :bob!b@h notice alice :psst", true],
    ["PRIVMSG #c :no source", true],
    [":bob!b@h JOIN #c", false],
    [":irc 001 alice :Welcome", false],
    ["@label=x :irc ACK", false],
    [":PRIVMSG", false],
    ["@only-tags", false]
  ])("%s → %s", (raw, expected) => expect(arrivesStored(raw)).toBe(expected))
})

describe("MODE requests", () => {
  const isupport = applyISupport(defaultISupport, ["me", "CHANMODES=beI,k,l,imnpst", "PREFIX=(ov)@+"])
  it.each([
    ["+o bob", [{ sign: "+", letter: "o", param: "bob" }]],
    ["+mt-l", [{ sign: "+", letter: "m" }, { sign: "+", letter: "t" }, { sign: "-", letter: "l" }]],
    ["+l 10", [{ sign: "+", letter: "l", param: "10" }]],
    ["-k", [{ sign: "-", letter: "k" }]],
    ["+b *!*@x", [{ sign: "+", letter: "b", param: "*!*@x" }]]
  ])("%s", (line, expected) => {
    const [modes = "", ...args] = line.split(" ")
    expect(parseModeChanges(isupport, modes, args)).toEqual(expected)
  })
  it.each(["+b", "b", "+Z", "+o", "+m extra"])("%j is left to the upstream", (line) => {
    const [modes = "", ...args] = line.split(" ")
    expect(parseModeChanges(isupport, modes, args)).toBeUndefined()
  })
})
