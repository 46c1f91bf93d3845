/**
 * The composer's text as tool calls (client/src/Commands.ts): plain lines, every slash command with its arguments,
 * and the inputs that are refused with nothing sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { parseInput, parseModeChanges } from "../../client/src/Commands.js"

const inChannel = { networkId: 7, target: "#belay" }
const inServer = { networkId: 7, target: ":server:7" }
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args })

describe("parseInput", () => {
  it.each([
    ["hello", inChannel, [call("send_message", { networkId: 7, target: "#belay", text: "hello" })], undefined],
    ["one\n\ntwo", inChannel, [
      call("send_message", { networkId: 7, target: "#belay", text: "one" }),
      call("send_message", { networkId: 7, target: "#belay", text: "two" })
    ], undefined],
    ["//slash", inChannel, [call("send_message", { networkId: 7, target: "#belay", text: "/slash" })], undefined],
    ["/join #a key", inChannel, [call("join_channel", { networkId: 7, channel: "#a", key: "key" })], "#a"],
    ["/join b", inChannel, [call("join_channel", { networkId: 7, channel: "#b" })], "#b"],
    ["/part", inChannel, [call("part_channel", { networkId: 7, channel: "#belay" })], undefined],
    ["/part #x bye now", inServer, [call("part_channel", { networkId: 7, channel: "#x", reason: "bye now" })], undefined],
    ["/part see you", inChannel, [call("part_channel", { networkId: 7, channel: "#belay", reason: "see you" })], undefined],
    ["/msg carol hi  there", inChannel, [call("send_message", { networkId: 7, target: "carol", text: "hi  there" })], "carol"],
    ["/me waves", inChannel, [call("send_action", { networkId: 7, target: "#belay", text: "waves" })], undefined],
    ["/notice carol psst", inChannel, [call("send_notice", { networkId: 7, target: "carol", text: "psst" })], undefined],
    ["/nick newme", inChannel, [call("set_nick", { networkId: 7, nick: "newme" })], undefined],
    ["/topic Hello world", inChannel, [call("set_topic", { networkId: 7, channel: "#belay", topic: "Hello world" })], undefined],
    ["/topic #x T", inServer, [call("set_topic", { networkId: 7, channel: "#x", topic: "T" })], undefined],
    ["/mode +o-v alice bob", inChannel, [call("set_channel_modes", {
      networkId: 7,
      channel: "#belay",
      changes: [{ sign: "+", letter: "o", param: "alice" }, { sign: "-", letter: "v", param: "bob" }]
    })], undefined],
    ["/mode #x +nt-l", inServer, [call("set_channel_modes", {
      networkId: 7,
      channel: "#x",
      changes: [{ sign: "+", letter: "n" }, { sign: "+", letter: "t" }, { sign: "-", letter: "l" }]
    })], undefined],
    ["/away lunch", inChannel, [call("set_away", { networkId: 7, message: "lunch" })], undefined],
    ["/away", inChannel, [call("set_away", { networkId: 7 })], undefined],
    ["/whois carol", inChannel, [call("whois", { networkId: 7, nick: "carol" })], ":server:7"],
    ["/quote PRIVMSG #a :raw", inServer, [call("send_raw", { networkId: 7, line: "PRIVMSG #a :raw" })], undefined],
    ["/JOIN #Up", inChannel, [call("join_channel", { networkId: 7, channel: "#Up" })], "#Up"]
  ] as const)("%j", (input, ctx, calls, open) => {
    const outcome = parseInput(input, ctx)
    expect(outcome).toEqual(open === undefined ? { kind: "calls", calls } : { kind: "calls", calls, open: { target: open } })
  })

  it.each([
    ["", inChannel],
    ["  \n ", inChannel],
    ["hello", inServer],
    ["/me waves", inServer],
    ["/part", inServer],
    ["/msg carol", inChannel],
    ["/nick two words", inChannel],
    ["/topic", inChannel],
    ["/mode", inChannel],
    ["/mode +o", inServer],
    ["/mode +x+ alice", inChannel],
    ["/whois", inChannel],
    ["/quote", inChannel],
    ["/frobnicate now", inChannel]
  ] as const)("%j is refused, nothing sent", (input, ctx) => {
    expect(parseInput(input, ctx).kind).toBe("error")
  })
})

describe("parseModeChanges", () => {
  it("gives list and status modes their parameter, l only when set, and refuses a parameter left over", () => {
    expect(parseModeChanges("+b-k+l", ["*!*@bad", "key", "10"])).toEqual([
      { sign: "+", letter: "b", param: "*!*@bad" },
      { sign: "-", letter: "k", param: "key" },
      { sign: "+", letter: "l", param: "10" }
    ])
    expect(parseModeChanges("-k", [])).toEqual([{ sign: "-", letter: "k" }])
    expect(parseModeChanges("+m", ["extra"])).toBeNull()
    expect(parseModeChanges("m", [])).toBeNull()
  })
})
