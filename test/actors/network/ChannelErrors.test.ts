import { describe, expect, it } from "@effect/vitest"
import { type ChannelError, channelErrorFor, type ChannelErrorOptions } from "../../../src/actors/network/ChannelErrors.js"
import { parseLine } from "../../../src/irc/IrcLine.js"
import { applyISupport, defaultISupport } from "../../../src/irc/ISupport.js"

const line = (raw: string) => {
  const parsed = parseLine(raw)
  if (parsed === undefined) throw new Error(`unparsable ${raw}`)
  return parsed
}

describe("channelErrorFor", () => {
  it.each<{ name: string; raw: string; expected: ChannelError; options?: ChannelErrorOptions }>([
    {
      name: "482 from a refused TOPIC",
      raw: ":irc.test 482 me #chan :You're not channel operator",
      expected: { channel: "#chan", numeric: "482", text: "Channel operator privileges needed: You're not channel operator (482)" }
    },
    {
      name: "482 with InspIRCd's specific text",
      raw: ":irc.test 482 me #chan :You must have channel op access or above to set channel mode b",
      expected: {
        channel: "#chan",
        numeric: "482",
        text: "Channel operator privileges needed: You must have channel op access or above to set channel mode b (482)"
      }
    },
    {
      name: "467 key already set",
      raw: ":irc.test 467 me #chan :Channel key already set",
      expected: { channel: "#chan", numeric: "467", text: "The channel key is already set: Channel key already set (467)" }
    },
    {
      name: "478 list full names the list",
      raw: ":irc.test 478 me #chan b :Channel ban list is full",
      expected: { channel: "#chan", numeric: "478", text: "The b list is full: Channel ban list is full (478)" }
    },
    {
      name: "472 goes to the channel of the last mode change",
      raw: ":irc.test 472 me Z :is unknown mode char to me",
      options: { lastModeChannel: "#chan" },
      expected: { channel: "#chan", numeric: "472", text: "Unknown mode Z: is unknown mode char to me (472)" }
    },
    {
      name: "471 full",
      raw: ":irc.test 471 me #chan :Cannot join channel (+l)",
      expected: { channel: "#chan", numeric: "471", text: "Cannot join: the channel is full (+l): Cannot join channel (+l) (471)" }
    },
    {
      name: "473 invite only",
      raw: ":irc.test 473 me #chan :Cannot join channel (+i)",
      expected: { channel: "#chan", numeric: "473", text: "Cannot join: the channel is invite-only (+i): Cannot join channel (+i) (473)" }
    },
    {
      name: "474 banned",
      raw: ":irc.test 474 me #chan :Cannot join channel (+b)",
      expected: { channel: "#chan", numeric: "474", text: "Cannot join: banned from the channel (+b): Cannot join channel (+b) (474)" }
    },
    {
      name: "475 bad key",
      raw: ":irc.test 475 me #chan :Cannot join channel (+k)",
      expected: { channel: "#chan", numeric: "475", text: "Cannot join: wrong or missing channel key (+k): Cannot join channel (+k) (475)" }
    },
    {
      name: "477 registered nick needed",
      raw: ":irc.test 477 me #chan :Cannot join channel (+r) - you need to be identified with services",
      expected: {
        channel: "#chan",
        numeric: "477",
        text: "Refused: the channel needs a registered nick or has no modes: Cannot join channel (+r) - you need to be identified with services (477)"
      }
    },
    {
      name: "403 no such channel",
      raw: ":irc.test 403 me #gone :No such channel",
      expected: { channel: "#gone", numeric: "403", text: "No such channel (403)" }
    },
    {
      name: "401 about a channel (InspIRCd)",
      raw: ":irc.test 401 me #gone :No such nick/channel",
      expected: { channel: "#gone", numeric: "401", text: "No such channel: No such nick/channel (401)" }
    },
    {
      name: "442 not on channel",
      raw: ":irc.test 442 me #chan :You're not on that channel",
      expected: { channel: "#chan", numeric: "442", text: "You are not on the channel: You're not on that channel (442)" }
    },
    {
      name: "441 names the nick; channel is third",
      raw: ":irc.test 441 me bob #chan :They aren't on that channel",
      expected: { channel: "#chan", numeric: "441", text: "bob is not on the channel: They aren't on that channel (441)" }
    },
    {
      name: "404 cannot send",
      raw: ":irc.test 404 me #chan :Cannot send to channel",
      expected: { channel: "#chan", numeric: "404", text: "Cannot send to the channel: Cannot send to channel (404)" }
    },
    {
      name: "696 invalid mode param on a channel",
      raw: ":irc.test 696 me #chan l abc :Invalid limit",
      expected: { channel: "#chan", numeric: "696", text: "Invalid parameter for mode l: Invalid limit (696)" }
    },
    {
      name: "an unknown error numeric naming a channel",
      raw: ":irc.test 520 me #opers :Only IRC operators may join",
      expected: { channel: "#opers", numeric: "520", text: "Refused by the server: Only IRC operators may join (520)" }
    },
    {
      name: "a & channel under the default CHANTYPES",
      raw: ":irc.test 482 me &local :You're not channel operator",
      expected: { channel: "&local", numeric: "482", text: "Channel operator privileges needed: You're not channel operator (482)" }
    },
    {
      name: "a + channel when CHANTYPES has it (ngircd)",
      raw: ":irc.test 482 me +modeless :You're not channel operator",
      options: { isupport: applyISupport(defaultISupport, ["me", "CHANTYPES=#&+", "x y"]) },
      expected: { channel: "+modeless", numeric: "482", text: "Channel operator privileges needed: You're not channel operator (482)" }
    }
  ])("$name", ({ raw, expected, options }) => {
    expect(channelErrorFor(line(raw), options)).toEqual(expected)
  })

  it.each([
    { name: "401 about a nick", raw: ":irc.test 401 me bob :No such nick/channel" },
    { name: "472 with no channel known", raw: ":irc.test 472 me Z :is unknown mode char to me" },
    { name: "433 nick in use", raw: ":irc.test 433 me bob :Nickname is already in use" },
    { name: "a reply that is not an error", raw: ":irc.test 332 me #chan :topic" },
    { name: "a PRIVMSG", raw: ":bob!b@h PRIVMSG #chan :482" },
    { name: "403 whose target is no channel", raw: ":irc.test 403 me chan :No such channel" },
    { name: "482 with the channel only in the text", raw: ":irc.test 482 me :#chan" },
    {
      name: "a + target when CHANTYPES lacks +",
      raw: ":irc.test 482 me +x :You're not channel operator"
    }
  ])("$name is not a channel error", ({ raw }) => {
    expect(channelErrorFor(line(raw))).toBeUndefined()
  })
})
