import { describe, expect, it } from "@effect/vitest"
import { messageTargetsOfRawLine, privmsgTargetsOfRawLine } from "../../src/irc/RawGuard.js"

describe("RawGuard", () => {
  it.each([
    { name: "plain PRIVMSG", raw: "PRIVMSG #belay :hello", targets: ["#belay"] },
    { name: "lowercase command", raw: "privmsg #belay :hello", targets: ["#belay"] },
    { name: "mixed-case command", raw: "PrivMsg #belay :hello", targets: ["#belay"] },
    { name: "message tags", raw: "@+draft/reply=abc;label=x PRIVMSG #belay :hi", targets: ["#belay"] },
    { name: "prefix", raw: ":me!u@h PRIVMSG #belay :hi", targets: ["#belay"] },
    { name: "tags and prefix", raw: "@label=1 :me!u@h privmsg #belay :hi", targets: ["#belay"] },
    { name: "several targets", raw: "PRIVMSG #a,#b,nick :hi", targets: ["#a", "#b", "nick"] },
    { name: "empty entries in the list", raw: "PRIVMSG ,#a,,#b, :hi", targets: ["#a", "#b"] },
    { name: "leading spaces", raw: "   PRIVMSG #belay :hi", targets: ["#belay"] },
    { name: "extra spaces everywhere", raw: "  @t=1   :p   PRIVMSG    #belay    :hi  there", targets: ["#belay"] },
    { name: "text without a colon", raw: "PRIVMSG #belay hello", targets: ["#belay"] },
    { name: "no text at all", raw: "PRIVMSG #belay", targets: ["#belay"] },
    { name: "target given as trailing", raw: "PRIVMSG :#belay", targets: ["#belay"] },
    { name: "trailing target list with a space", raw: "PRIVMSG :#a,#b hi", targets: ["#a", "#b", "hi"] },
    { name: "CTCP ACTION", raw: "PRIVMSG #belay :\u0001ACTION waves\u0001", targets: ["#belay"] },
    { name: "trailing CR LF", raw: "PRIVMSG #belay :hi\r\n", targets: ["#belay"] },
    { name: "a second line hidden after CR LF", raw: "NICK me\r\nPRIVMSG #belay :hi", targets: ["#belay"] },
    { name: "a second line hidden after a bare LF", raw: "JOIN #x\nprivmsg #belay :hi", targets: ["#belay"] },
    { name: "lines after a bare CR", raw: "PRIVMSG #a :x\rPRIVMSG #b :y", targets: ["#a", "#b"] },
    { name: "NOTICE", raw: "NOTICE #belay :hello", targets: ["#belay"] },
    { name: "lowercase notice with tags", raw: "@a=b notice #belay,#other :hi", targets: ["#belay", "#other"] },
    { name: "JOIN", raw: "JOIN #belay", targets: [] },
    { name: "TOPIC", raw: "TOPIC #belay :plaintext topic", targets: [] },
    { name: "PART with reason", raw: "PART #belay :bye", targets: [] },
    { name: "MODE", raw: "MODE #belay +o nick", targets: [] },
    { name: "TAGMSG", raw: "@+typing=active TAGMSG #belay", targets: [] },
    { name: "PRIVMSG as a parameter", raw: "WHOIS PRIVMSG #belay", targets: [] },
    { name: "command glued to tags", raw: "@tag=PRIVMSG #belay :hi", targets: [] },
    { name: "PRIVMSGX", raw: "PRIVMSGX #belay :hi", targets: [] },
    { name: "bare PRIVMSG", raw: "PRIVMSG", targets: [] },
    { name: "only spaces", raw: "    ", targets: [] },
    { name: "empty line", raw: "", targets: [] },
    { name: "tags only", raw: "@a=b", targets: [] },
    { name: "prefix only", raw: ":server", targets: [] }
  ])("$name", ({ raw, targets }) => {
    expect(messageTargetsOfRawLine(raw)).toEqual(targets)
  })

  it.each([
    { raw: "PRIVMSG #belay :hi", targets: ["#belay"] },
    { raw: "privmsg #a,#b :hi", targets: ["#a", "#b"] },
    { raw: "NOTICE #belay :hi", targets: [] },
    { raw: "NOTICE #a :x\r\nPRIVMSG #b :y", targets: ["#b"] },
    { raw: "JOIN #belay", targets: [] }
  ])("PRIVMSG only: $raw", ({ raw, targets }) => {
    expect(privmsgTargetsOfRawLine(raw)).toEqual(targets)
  })

  it.each([
    { raw: "PRIVMSG @#belay :ops only", statusmsg: "@+", targets: ["#belay"] },
    { raw: "PRIVMSG +#belay,@#x :hi", statusmsg: "@+", targets: ["#belay", "#x"] },
    { raw: "NOTICE ~&@%+#belay :hi", statusmsg: "~&@%+", targets: ["#belay"] },
    { raw: "PRIVMSG @#belay :hi", statusmsg: "", targets: ["@#belay"] },
    { raw: "PRIVMSG @ :hi", statusmsg: "@", targets: ["@"] },
    { raw: "PRIVMSG nick :hi", statusmsg: "@+", targets: ["nick"] }
  ])("STATUSMSG $statusmsg: $raw", ({ raw, statusmsg, targets }) => {
    expect(messageTargetsOfRawLine(raw, statusmsg)).toEqual(targets)
  })
})
