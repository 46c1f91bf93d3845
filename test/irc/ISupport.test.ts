import { describe, expect, it } from "@effect/vitest"
import {
  applyISupport,
  defaultISupport,
  hasQuietList,
  isChannel,
  type ISupport,
  type ModeKind,
  modeKind,
  prefixSymbols,
  rankPrefixModes,
  splitNamesEntry,
  splitStatusMsg
} from "../../src/irc/ISupport.js"

// A 005 line's params: our nick, the tokens, the human-readable text.
const line = (...tokens: ReadonlyArray<string>) => ["belay", ...tokens, "are supported by this server"]
const from = (...tokens: ReadonlyArray<string>) => applyISupport(defaultISupport, line(...tokens))

// Real-world 005s.
const ngircd = from("PREFIX=(qaohv)~&@%+", "CHANTYPES=#&+", "CHANMODES=beI,k,l,imMnOPQRstVz", "MODES=5", "EXCEPTS=e", "INVEX=I")
const inspircd = from("CHANMODES=Ibe,k,l,imnpst", "MODES=6", "PREFIX=(ov)@+", "EXTBAN=,m")
const solanum = from(
  "CHANTYPES=#",
  "EXCEPTS",
  "INVEX",
  "CHANMODES=eIbq,k,flj,CFLMPQRSTcgimnprstuz",
  "CHANLIMIT=#:250",
  "PREFIX=(ov)@+",
  "MAXLIST=bqeI:100",
  "MODES=4",
  "NETWORK=Libera.Chat",
  "STATUSMSG=@+",
  "CASEMAPPING=rfc1459",
  "NICKLEN=16",
  "MONITOR=100"
)

describe("defaultISupport", () => {
  it("uses the RFC defaults", () => {
    expect(defaultISupport).toMatchObject({
      chanTypes: "#&",
      prefix: [{ mode: "o", symbol: "@" }, { mode: "v", symbol: "+" }],
      chanModes: { a: "b", b: "k", c: "l", d: "imnpst" },
      modes: 3,
      caseMapping: "rfc1459",
      nickLen: undefined,
      network: undefined,
      statusMsg: "",
      monitor: undefined,
      excepts: undefined,
      invex: undefined
    })
    expect(defaultISupport.tokens.size).toBe(0)
  })
})

describe("applyISupport", () => {
  it.each<{ name: string; tokens: ReadonlyArray<string>; expected: Partial<ISupport> }>([
    {
      name: "PREFIX, highest first",
      tokens: ["PREFIX=(qaohv)~&@%+"],
      expected: {
        prefix: [
          { mode: "q", symbol: "~" },
          { mode: "a", symbol: "&" },
          { mode: "o", symbol: "@" },
          { mode: "h", symbol: "%" },
          { mode: "v", symbol: "+" }
        ]
      }
    },
    { name: "empty PREFIX means no prefixes", tokens: ["PREFIX="], expected: { prefix: [] } },
    { name: "malformed PREFIX is ignored", tokens: ["PREFIX=(ov)@"], expected: { prefix: defaultISupport.prefix } },
    { name: "CHANTYPES", tokens: ["CHANTYPES=#"], expected: { chanTypes: "#" } },
    { name: "bare CHANTYPES means no channels", tokens: ["CHANTYPES"], expected: { chanTypes: "" } },
    { name: "CHANMODES", tokens: ["CHANMODES=beI,k,l,imnpst"], expected: { chanModes: { a: "beI", b: "k", c: "l", d: "imnpst" } } },
    { name: "CHANMODES extra groups ignored", tokens: ["CHANMODES=b,k,l,imnpst,XYZ"], expected: { chanModes: { a: "b", b: "k", c: "l", d: "imnpst" } } },
    { name: "CHANMODES missing groups empty", tokens: ["CHANMODES=b,k"], expected: { chanModes: { a: "b", b: "k", c: "", d: "" } } },
    { name: "MODES=1", tokens: ["MODES=1"], expected: { modes: 1 } },
    { name: "MODES=20", tokens: ["MODES=20"], expected: { modes: 20 } },
    { name: "bare MODES means unlimited", tokens: ["MODES"], expected: { modes: "unlimited" } },
    { name: "MODES= (empty) means unlimited", tokens: ["MODES="], expected: { modes: "unlimited" } },
    { name: "MODES=0 is invalid, ignored", tokens: ["MODES=0"], expected: { modes: 3 } },
    { name: "MODES=abc is invalid, ignored", tokens: ["MODES=abc"], expected: { modes: 3 } },
    { name: "CASEMAPPING=ascii", tokens: ["CASEMAPPING=ascii"], expected: { caseMapping: "ascii" } },
    { name: "CASEMAPPING=rfc1459-strict", tokens: ["CASEMAPPING=rfc1459-strict"], expected: { caseMapping: "strict-rfc1459" } },
    { name: "unknown CASEMAPPING", tokens: ["CASEMAPPING=weird"], expected: { caseMapping: "rfc1459" } },
    { name: "NICKLEN", tokens: ["NICKLEN=30"], expected: { nickLen: 30 } },
    { name: "NETWORK", tokens: ["NETWORK=Libera.Chat"], expected: { network: "Libera.Chat" } },
    { name: "NETWORK with \\x20 escape", tokens: ["NETWORK=My\\x20Net\\x5Cwork"], expected: { network: "My Net\\work" } },
    { name: "STATUSMSG", tokens: ["STATUSMSG=@+"], expected: { statusMsg: "@+" } },
    { name: "MONITOR=100", tokens: ["MONITOR=100"], expected: { monitor: 100 } },
    { name: "bare MONITOR means unlimited", tokens: ["MONITOR"], expected: { monitor: "unlimited" } },
    { name: "bare EXCEPTS means e", tokens: ["EXCEPTS"], expected: { excepts: "e" } },
    { name: "EXCEPTS=X", tokens: ["EXCEPTS=X"], expected: { excepts: "X" } },
    { name: "bare INVEX means I", tokens: ["INVEX"], expected: { invex: "I" } },
    { name: "INVEX=Y", tokens: ["INVEX=Y"], expected: { invex: "Y" } },
    { name: "later token overrides earlier", tokens: ["MODES=4", "MODES=6"], expected: { modes: 6 } },
    { name: "-MODES puts the default back", tokens: ["MODES=5", "-MODES"], expected: { modes: 3 } },
    { name: "-PREFIX puts the default back", tokens: ["PREFIX=(qov)~@+", "-PREFIX"], expected: { prefix: defaultISupport.prefix } },
    { name: "-EXCEPTS withdraws", tokens: ["EXCEPTS", "-EXCEPTS"], expected: { excepts: undefined } },
    { name: "-MONITOR withdraws", tokens: ["MONITOR=10", "-MONITOR"], expected: { monitor: undefined } },
    { name: "-CASEMAPPING puts rfc1459 back", tokens: ["CASEMAPPING=ascii", "-CASEMAPPING"], expected: { caseMapping: "rfc1459" } },
    { name: "-NETWORK withdraws", tokens: ["NETWORK=x", "-NETWORK"], expected: { network: undefined } },
    { name: "lower-case garbage skipped", tokens: ["modes=1"], expected: { modes: 3 } }
  ])("$name", ({ tokens, expected }) => {
    expect(from(...tokens)).toMatchObject(expected)
  })

  it("records raw tokens, decoded, and drops withdrawn ones", () => {
    const isupport = from("TARGMAX=PRIVMSG:4,NOTICE:4", "SAFELIST", "NETWORK=A\\x20B", "EXCEPTS", "-EXCEPTS")
    expect(Object.fromEntries(isupport.tokens)).toEqual({ TARGMAX: "PRIVMSG:4,NOTICE:4", SAFELIST: true, NETWORK: "A B" })
  })

  it("skips the nick and the trailing text", () => {
    const isupport = applyISupport(defaultISupport, ["MODES=9", "NICKLEN=5", "are supported by this server"])
    // The first param is the client's nick, whatever it looks like.
    expect(isupport.modes).toBe(3)
    expect(isupport.nickLen).toBe(5)
    expect([...isupport.tokens.keys()]).toEqual(["NICKLEN"])
  })

  it("accumulates over several 005 lines and leaves the input untouched", () => {
    const first = from("PREFIX=(ov)@+", "MODES=4")
    const second = applyISupport(first, line("CHANMODES=eIbq,k,flj,imnpst", "-MODES"))
    expect(first.modes).toBe(4)
    expect(first.chanModes).toEqual(defaultISupport.chanModes)
    expect(second.modes).toBe(3)
    expect(second.chanModes.a).toBe("eIbq")
    expect([...second.tokens.keys()]).toEqual(["PREFIX", "CHANMODES"])
  })

  it("parses real servers' 005s", () => {
    expect(ngircd).toMatchObject({ chanTypes: "#&+", modes: 5, excepts: "e", invex: "I" })
    expect(inspircd).toMatchObject({ chanModes: { a: "Ibe", b: "k", c: "l", d: "imnpst" }, modes: 6 })
    expect(solanum).toMatchObject({ network: "Libera.Chat", nickLen: 16, monitor: 100, statusMsg: "@+", chanTypes: "#" })
  })
})

describe("isChannel", () => {
  it.each([
    { name: "#chan by default", isupport: defaultISupport, target: "#belay", result: true },
    { name: "&chan by default", isupport: defaultISupport, target: "&local", result: true },
    { name: "nick", isupport: defaultISupport, target: "alice", result: false },
    { name: "empty", isupport: defaultISupport, target: "", result: false },
    { name: "STATUSMSG target is not a channel", isupport: solanum, target: "@#belay", result: false },
    { name: "&chan where CHANTYPES=#", isupport: solanum, target: "&local", result: false },
    { name: "+chan on ngircd", isupport: ngircd, target: "+modeless", result: true }
  ])("$name", ({ isupport, target, result }) => {
    expect(isChannel(isupport, target)).toBe(result)
  })
})

describe("splitStatusMsg", () => {
  it.each([
    { name: "@#chan", target: "@#belay", result: { status: "@", channel: "#belay" } },
    { name: "+#chan", target: "+#belay", result: { status: "+", channel: "#belay" } },
    { name: "@+#chan", target: "@+#belay", result: { status: "@+", channel: "#belay" } },
    { name: "plain channel", target: "#belay", result: undefined },
    { name: "nick", target: "alice", result: undefined },
    { name: "status before a nick", target: "@alice", result: undefined }
  ])("$name", ({ target, result }) => {
    expect(splitStatusMsg(solanum, target)).toEqual(result)
  })
})

describe("modeKind", () => {
  it.each<{ name: string; isupport: ISupport; letter: string; kind: ModeKind | undefined }>([
    { name: "ban list", isupport: ngircd, letter: "b", kind: "list" },
    { name: "exception list", isupport: ngircd, letter: "e", kind: "list" },
    { name: "key", isupport: ngircd, letter: "k", kind: "always-param" },
    { name: "limit", isupport: ngircd, letter: "l", kind: "set-param" },
    { name: "flag", isupport: ngircd, letter: "n", kind: "no-param" },
    { name: "op", isupport: ngircd, letter: "o", kind: "prefix" },
    { name: "voice", isupport: ngircd, letter: "v", kind: "prefix" },
    { name: "q is a prefix (owner) on ngircd", isupport: ngircd, letter: "q", kind: "prefix" },
    { name: "q is a list (quiet) on Solanum", isupport: solanum, letter: "q", kind: "list" },
    { name: "f is set-param on Solanum", isupport: solanum, letter: "f", kind: "set-param" },
    { name: "unknown letter", isupport: ngircd, letter: "X", kind: undefined },
    { name: "case matters", isupport: ngircd, letter: "B", kind: undefined },
    { name: "empty", isupport: ngircd, letter: "", kind: undefined },
    { name: "two letters", isupport: ngircd, letter: "ov", kind: undefined },
    { name: "a comma is never a mode", isupport: ngircd, letter: ",", kind: undefined },
    { name: "defaults: b", isupport: defaultISupport, letter: "b", kind: "list" },
    { name: "defaults: e unknown", isupport: defaultISupport, letter: "e", kind: undefined }
  ])("$name", ({ isupport, letter, kind }) => {
    expect(modeKind(isupport, letter)).toBe(kind)
  })
})

describe("hasQuietList", () => {
  it.each([
    { name: "Solanum (q in type A)", isupport: solanum, result: true },
    { name: "ngircd (q is owner)", isupport: ngircd, result: false },
    { name: "InspIRCd without q", isupport: inspircd, result: false },
    { name: "defaults", isupport: defaultISupport, result: false }
  ])("$name", ({ isupport, result }) => {
    expect(hasQuietList(isupport)).toBe(result)
  })
})

describe("prefix helpers", () => {
  it.each([
    { name: "ranks highest first", letters: ["v", "o"], ranked: ["o", "v"], symbols: "@+" },
    { name: "all five", letters: ["h", "v", "q", "a", "o"], ranked: ["q", "a", "o", "h", "v"], symbols: "~&@%+" },
    { name: "drops non-prefix letters", letters: ["n", "o"], ranked: ["o"], symbols: "@" },
    { name: "none", letters: [], ranked: [], symbols: "" }
  ])("$name", ({ letters, ranked, symbols }) => {
    expect(rankPrefixModes(ngircd, letters)).toEqual(ranked)
    expect(prefixSymbols(ngircd, letters)).toBe(symbols)
  })

  it.each([
    { name: "no prefix", entry: "alice", modes: [], rest: "alice" },
    { name: "op", entry: "@alice", modes: ["o"], rest: "alice" },
    { name: "multi-prefix", entry: "@+alice", modes: ["o", "v"], rest: "alice" },
    { name: "multi-prefix out of order", entry: "+@alice", modes: ["o", "v"], rest: "alice" },
    { name: "all five with userhost-in-names", entry: "~&@%+a!u@h", modes: ["q", "a", "o", "h", "v"], rest: "a!u@h" },
    { name: "symbol not a prefix stays in the nick", entry: "*alice", modes: [], rest: "*alice" }
  ])("splitNamesEntry: $name", ({ entry, modes, rest }) => {
    expect(splitNamesEntry(ngircd, entry)).toEqual({ modes, rest })
  })
})
