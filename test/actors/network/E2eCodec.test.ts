// E2eCodec: which key a target uses, the encrypted lines sent, how inbound FiSH lines are opened, and the send_raw
// guard. Pure, table-driven. Inbound ciphertext comes from other FiSH implementations' own test suites, so the
// opening path is proven against foreign senders, not only against our own encryption.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import {
  E2eKeyTable,
  encryptedTargetOfRaw,
  historyOfInbound,
  keyForTarget,
  openInbound,
  sealMessage
} from "../../../src/actors/network/E2eCodec.js"
import type { CaseMapping } from "../../../src/irc/CaseMapping.js"
import { type IrcLine, MAX_LINE_BYTES, parseLine } from "../../../src/irc/IrcLine.js"
import { applyISupport, defaultISupport, type ISupport } from "../../../src/irc/ISupport.js"
import { type FishKey, fishDecrypt, fishEncrypt, parseFishKey } from "../../../src/services/crypto/Fish.js"
import type { NewMessage } from "../../../src/services/history/MessageRow.js"

const key = (raw: string): FishKey => Either.getOrThrow(parseFishKey(raw))
const line = (raw: string): IrcLine => {
  const parsed = parseLine(raw)
  if (parsed === undefined) throw new Error(`unparseable ${raw}`)
  return parsed
}
const isupportWith = (...tokens: ReadonlyArray<string>): ISupport => applyISupport(defaultISupport, ["me", ...tokens, "are supported"])
const bytes = (s: string) => Buffer.byteLength(s, "utf8")

const QUICK_FOX = "The quick brown fox jumps over the lazy dog"
// mpolden/fish fish_test.go (Test_Decrypt_OkPrefix) and synfron/FiSH FiSHTests/FishTests.cs (EcbDecrypt):
// ECB, key "unladen swallow".
const ECB_FOX = "+OK zT/uX.Z4Q3A/G4YzZ02hMhT1mAsBo.iVKz71YPSQz/trfT4/srrS611D5Qz.cnm/71snKIp0"
// synfron/FiSH FiSHTests/FishTests.cs (CbcDecrypt): CBC with the sender's random IV, key "unladen swallow".
const CBC_FOX = "+OK *C/Tewfid2vcfWq0YpmVwnGMflO79MbkjHcOxW1T384H0lpP4PAf3bY1ctRjM+rPZmJkhf0GCtiE="

const SWALLOW = key("unladen swallow")
const OTHER = key("cbc:another key")
const IS = isupportWith("CASEMAPPING=rfc1459", "STATUSMSG=@+", "PREFIX=(ov)@+", "CHANTYPES=#&")
const table = E2eKeyTable.fromEntries([
  { target: "#Enc", key: SWALLOW },
  { target: "Alice", key: SWALLOW },
  { target: "#other", key: OTHER }
])

describe("E2eKeyTable", () => {
  it.each<{ name: string; stored: string; mapping: CaseMapping; asked: string; found: boolean }>([
    { name: "rfc1459: letters and []\\^ fold", stored: "#Enc[x]^", mapping: "rfc1459", asked: "#ENC{X}~", found: true },
    { name: "strict-rfc1459 still matches the store's rfc1459 fold (safe side)", stored: "#a^", mapping: "strict-rfc1459", asked: "#A~", found: true },
    { name: "ascii: #a[ and #a{ share a key (over-encrypting, never a miss)", stored: "#a[", mapping: "ascii", asked: "#A{", found: true },
    { name: "rfc7613: Unicode case folds under the network's mapping", stored: "#Ärger", mapping: "rfc7613", asked: "#ärger", found: true },
    { name: "rfc1459 does not fold Unicode", stored: "#Ärger", mapping: "rfc1459", asked: "#ärger", found: false },
    { name: "another name", stored: "#enc", mapping: "rfc1459", asked: "#enc2", found: false }
  ])("$name", ({ stored, mapping, asked, found }) => {
    const t = E2eKeyTable.fromEntries([{ target: stored, key: SWALLOW }])
    expect(t.has(mapping, asked)).toBe(found)
    expect(t.get(mapping, asked)).toBe(found ? SWALLOW : undefined)
  })

  it("with no stored key, is the shared empty table, which an update leaves empty", () => {
    const none = E2eKeyTable.fromEntries([])
    expect(none).toBe(E2eKeyTable.empty)
    expect(none.apply({ networkId: 1, target: "#Enc", key: SWALLOW }).has("rfc1459", "#enc")).toBe(true)
    expect(E2eKeyTable.fromEntries([]).size).toBe(0)
    expect(E2eKeyTable.fromEntries([]).has("rfc1459", "#enc")).toBe(false)
  })

  it("applies sets and clears by the store's rfc1459 identity, and is immutable", () => {
    const set = E2eKeyTable.empty.apply({ networkId: 1, target: "#Enc", key: SWALLOW })
    expect(set.has("rfc1459", "#enc")).toBe(true)
    expect(E2eKeyTable.empty.size).toBe(0)
    const replaced = set.apply({ networkId: 1, target: "#ENC", key: OTHER })
    expect(replaced.size).toBe(1)
    expect(replaced.get("ascii", "#enc")).toBe(OTHER)
    const cleared = replaced.apply({ networkId: 1, target: "#enc" })
    expect(cleared.has("rfc1459", "#Enc")).toBe(false)
    expect(replaced.has("rfc1459", "#Enc")).toBe(true)
  })

  it("re-indexes when the CASEMAPPING changes", () => {
    const t = E2eKeyTable.fromEntries([{ target: "#Ärger", key: SWALLOW }])
    expect(t.has("rfc1459", "#ärger")).toBe(false)
    expect(t.has("rfc7613", "#ärger")).toBe(true)
    expect(t.has("rfc1459", "#ärger")).toBe(false)
  })
})

describe("keyForTarget", () => {
  it.each([
    { target: "#enc", found: SWALLOW },
    { target: "#ENC", found: SWALLOW },
    { target: "@#enc", found: SWALLOW },
    { target: "+#Enc", found: SWALLOW },
    { target: "alice", found: SWALLOW },
    { target: "#other", found: OTHER },
    { target: "#open", found: undefined },
    { target: "bob", found: undefined }
  ])("$target", ({ target, found }) => {
    expect(keyForTarget(table, IS, target)).toBe(found)
  })
})

describe("sealMessage", () => {
  const iv = () => Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8])
  const seal = (k: FishKey, kind: "privmsg" | "action" | "notice", text: string, target = "#enc") => {
    const sealed = sealMessage(k, { kind, target, text, prefixAllowance: 40, randomIv: iv })
    if (!sealed.ok) throw new Error(sealed.reason)
    return sealed.lines
  }

  it.each([
    { kind: "privmsg" as const, k: "ecb", wire: `PRIVMSG #enc :${fishEncrypt(SWALLOW, "hello")}`, plain: "PRIVMSG #enc hello" },
    { kind: "notice" as const, k: "ecb", wire: `NOTICE #enc :${fishEncrypt(SWALLOW, "hello")}`, plain: "NOTICE #enc hello" },
    {
      kind: "action" as const,
      k: "ecb",
      wire: `PRIVMSG #enc :\x01ACTION ${fishEncrypt(SWALLOW, "hello")}\x01`,
      plain: "PRIVMSG #enc :\x01ACTION hello\x01"
    },
    { kind: "privmsg" as const, k: "cbc", wire: `PRIVMSG #enc :${fishEncrypt(OTHER, "hello", iv)}`, plain: "PRIVMSG #enc hello" }
  ])("$kind in $k: the FiSH wire form and its plaintext twin", ({ kind, k, wire, plain }) => {
    expect(seal(k === "ecb" ? SWALLOW : OTHER, kind, "hello")).toEqual([{ wire, plain }])
  })

  it("CBC lines are `+OK *` with a fresh random IV each", () => {
    const a = sealMessage(OTHER, { kind: "privmsg", target: "#enc", text: "same", prefixAllowance: 40 })
    const b = sealMessage(OTHER, { kind: "privmsg", target: "#enc", text: "same", prefixAllowance: 40 })
    if (!a.ok || !b.ok) throw new Error("sealing failed")
    expect(a.lines[0]?.wire).toMatch(/^PRIVMSG #enc :\+OK \*[A-Za-z0-9+/]+=*$/)
    expect(a.lines[0]?.wire).not.toBe(b.lines[0]?.wire)
  })

  it.each([
    { mode: "ecb", kind: "privmsg" as const },
    { mode: "cbc", kind: "privmsg" as const },
    { mode: "cbc", kind: "action" as const },
    { mode: "ecb", kind: "notice" as const }
  ])("long $kind text in $mode: every relayed line fits 512 bytes, and the pieces decrypt back to the text", ({ mode, kind }) => {
    const k = key(`${mode}:k3y`)
    const text = "é🙂 combining e\u0301 and words ".repeat(60) + "end"
    const prefix = ":belay!belayuser@some.rather.long.host.example.org "
    const sealed = sealMessage(k, { kind, target: "#enc", text, prefixAllowance: bytes(prefix) })
    if (!sealed.ok) throw new Error(sealed.reason)
    expect(sealed.lines.length).toBeGreaterThan(3)
    const pieces = sealed.lines.map(({ wire, plain }) => {
      expect(bytes(prefix + wire + "\r\n")).toBeLessThanOrEqual(MAX_LINE_BYTES)
      const text = parseLine(wire)?.params[1] ?? ""
      const payload = kind === "action" ? text.slice("\x01ACTION ".length, -1) : text
      const opened = fishDecrypt(k, payload)
      if (!opened.ok) throw new Error(opened.reason)
      expect(opened.truncated).toBe(false)
      const plainText = parseLine(plain)?.params[1] ?? ""
      expect(kind === "action" ? `\x01ACTION ${opened.text}\x01` : opened.text).toBe(plainText)
      return opened.text
    })
    expect(pieces.join("")).toBe(text)
  })

  it("a target too long to leave room for any text is refused, not thrown", () => {
    const sealed = sealMessage(SWALLOW, { kind: "privmsg", target: "#" + "x".repeat(470), text: "hi", prefixAllowance: 40 })
    expect(sealed).toMatchObject({ ok: false })
  })
})

describe("openInbound", () => {
  const open = (raw: string, selfNick = "belay") => openInbound(table, IS, selfNick, line(raw))
  const opened = (raw: string, selfNick = "belay") => {
    const result = open(raw, selfNick)
    return result === undefined ? undefined : { encryption: result.encryption, text: result.line.params[1] }
  }

  it.each([
    { name: "ECB to a channel (mpolden/fish vector)", raw: `:x!u@h PRIVMSG #enc :${ECB_FOX}`, text: QUICK_FOX },
    { name: "CBC to a channel (synfron/FiSH vector)", raw: `:x!u@h PRIVMSG #ENC :${CBC_FOX}`, text: QUICK_FOX },
    { name: "CTCP ACTION keeps its framing", raw: `:x!u@h PRIVMSG #enc :\x01ACTION ${CBC_FOX}\x01`, text: `\x01ACTION ${QUICK_FOX}\x01` },
    { name: "FiSHLiM's ACTION with a space before \\x01", raw: `:x!u@h PRIVMSG #enc :\x01ACTION ${ECB_FOX} \x01`, text: `\x01ACTION ${QUICK_FOX}\x01` },
    { name: "NOTICE", raw: `:x!u@h NOTICE #enc :${ECB_FOX}`, text: QUICK_FOX },
    { name: "STATUSMSG target uses the channel's key", raw: `:x!u@h PRIVMSG @#enc :${ECB_FOX}`, text: QUICK_FOX },
    { name: "Mircryption prefix", raw: `:x!u@h PRIVMSG #enc :${ECB_FOX.replace("+OK ", "mcps ")}`, text: QUICK_FOX },
    { name: "a DM uses the sender's key", raw: `:ALICE!u@h PRIVMSG belay :${ECB_FOX}`, text: QUICK_FOX },
    { name: "our own echoed DM uses the recipient's key", raw: `:Belay!u@h PRIVMSG alice :${CBC_FOX}`, text: QUICK_FOX },
    { name: "with tags", raw: `@time=2024-01-01T00:00:00.000Z :x!u@h PRIVMSG #enc :${ECB_FOX}`, text: QUICK_FOX }
  ])("decrypted: $name", ({ raw, text }) => {
    expect(opened(raw)).toEqual({ encryption: "decrypted", text })
  })

  it.each([
    { name: "wrong key", raw: `:x!u@h PRIVMSG #other :${ECB_FOX}` },
    { name: "garbage after +OK", raw: ":x!u@h PRIVMSG #enc :+OK !!!not-fish!!!" },
    { name: "cut to less than one block", raw: ":x!u@h PRIVMSG #enc :+OK zT/uX" }
  ])("undecryptable, stored as received: $name", ({ raw }) => {
    const result = open(raw)
    expect(result?.encryption).toBe("undecryptable")
    expect(result?.line).toEqual(line(raw))
  })

  it.each([
    { name: "plaintext in an encrypted channel", raw: ":x!u@h PRIVMSG #enc :just talking" },
    { name: "ciphertext where there is no key", raw: `:x!u@h PRIVMSG #open :${ECB_FOX}` },
    { name: "ciphertext in a DM from a nick without a key", raw: `:bob!u@h PRIVMSG belay :${ECB_FOX}` },
    { name: "a TOPIC", raw: `:x!u@h TOPIC #enc :${ECB_FOX}` },
    { name: "a JOIN", raw: ":x!u@h JOIN #enc" },
    { name: "a CTCP other than ACTION", raw: ":x!u@h PRIVMSG #enc :\x01VERSION\x01" },
    { name: "a server notice", raw: `:irc.example NOTICE * :${ECB_FOX}` }
  ])("left alone (stored plain): $name", ({ raw }) => {
    expect(open(raw)).toBeUndefined()
  })

  it("no keys at all: nothing is even parsed for FiSH", () => {
    expect(openInbound(E2eKeyTable.empty, IS, "belay", line(`:x!u@h PRIVMSG #enc :${ECB_FOX}`))).toBeUndefined()
  })
})

describe("historyOfInbound", () => {
  const toMessages = (l: IrcLine): ReadonlyArray<NewMessage> => [{
    networkId: 1,
    target: l.params[0] ?? "",
    targetFolded: (l.params[0] ?? "").toLowerCase(),
    bufferKind: "channel",
    time: new Date(0),
    kind: "privmsg",
    nick: l.source?.nick ?? null,
    text: l.params[1] ?? "",
    self: false,
    raw: "the raw line"
  }]

  it.each([
    { raw: `:x!u@h PRIVMSG #enc :${ECB_FOX}`, text: QUICK_FOX, encryption: "decrypted" },
    { raw: `:x!u@h PRIVMSG #other :${ECB_FOX}`, text: ECB_FOX, encryption: "undecryptable" },
    { raw: ":x!u@h PRIVMSG #enc :hi", text: "hi", encryption: undefined }
  ])("$encryption", ({ raw, text, encryption }) => {
    const [m] = historyOfInbound(table, IS, "belay", line(raw), toMessages)
    expect(m?.text).toBe(text)
    expect(m?.encryption).toBe(encryption)
    expect(m?.raw).toBe("the raw line")
  })
})

describe("encryptedTargetOfRaw (the send_raw guard)", () => {
  it.each([
    { raw: "PRIVMSG #enc :x", refused: "#enc" },
    { raw: "privmsg #Enc :x", refused: "#Enc" },
    { raw: "PrivMsg #ENC :x", refused: "#ENC" },
    { raw: "@tag=1 :me PRIVMSG #a,#enc :x", refused: "#enc" },
    { raw: ":me PRIVMSG #a,,#enc :x", refused: "#enc" },
    { raw: "  PRIVMSG   #enc   :x", refused: "#enc" },
    { raw: "PRIVMSG :#enc", refused: "#enc" },
    { raw: "PRIVMSG #enc x", refused: "#enc" },
    { raw: "NOTICE #enc :x", refused: "#enc" },
    { raw: "PRIVMSG @#enc :x", refused: "#enc" },
    { raw: "PRIVMSG +@#enc :x", refused: "#enc" },
    { raw: "PRIVMSG alice :hi", refused: "alice" },
    { raw: "PRIVMSG #ENC{ :x", refused: undefined },
    { raw: "PRIVMSG #open :x", refused: undefined },
    { raw: "PRIVMSG #open,bob :x", refused: undefined },
    { raw: "TOPIC #enc :x", refused: undefined },
    { raw: "PART #enc :bye", refused: undefined },
    { raw: "MODE #enc +k key", refused: undefined },
    { raw: "JOIN #enc", refused: undefined },
    { raw: "TAGMSG #enc", refused: undefined }
  ])("$raw → $refused", ({ raw, refused }) => {
    expect(encryptedTargetOfRaw(table, IS, raw)).toBe(refused)
  })

  it("STATUSMSG characters are also read as part of a name, so a keyed `+chan` is not stripped away", () => {
    const t = E2eKeyTable.fromEntries([{ target: "+modeless", key: SWALLOW }])
    expect(encryptedTargetOfRaw(t, isupportWith("STATUSMSG=@+", "CHANTYPES=#+"), "PRIVMSG +modeless :x")).toBe("+modeless")
  })

  it("uses the network's CASEMAPPING", () => {
    const t = E2eKeyTable.fromEntries([{ target: "#Ärger", key: SWALLOW }])
    expect(encryptedTargetOfRaw(t, isupportWith("CASEMAPPING=rfc7613"), "PRIVMSG #ärger :x")).toBe("#ärger")
    expect(encryptedTargetOfRaw(t, isupportWith("CASEMAPPING=ascii"), "PRIVMSG #ärger :x")).toBeUndefined()
  })
})
