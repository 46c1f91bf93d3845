// Reactions: the reactions of a buffer's loaded lines, gathered under the message each names. A reaction is a stored
// `react` row (an upstream TAGMSG with `+draft/react`, docs/contract.md "MCP tool shapes": `text` is the reaction,
// `replyTo` the msgid it answers), never drawn as a line of its own. Aggregated as chat clients show them: one chip per
// distinct reaction, first given first, with its count and who gave it, each nick once, the member's own marked. Pure.
import { fold } from "./Casemap.js"
import type { MessageRecord } from "./Protocol.js"

/** Distinct reactions drawn under one message; what a busy channel adds beyond them is left out. */
export const MAX_REACTIONS_SHOWN = 20
/** A reaction is free text in IRCv3 (https://ircv3.net/specs/client-tags/react); one longer than this is cut. */
export const MAX_REACTION_CHARS = 32
/** The most nicks a reaction's description names before "and N more". */
export const MAX_NICKS_NAMED = 10

export interface ReactionGroup {
  readonly reaction: string
  readonly count: number
  /** Who gave it, in order, each once. */
  readonly nicks: ReadonlyArray<string>
  /** The member gave it. */
  readonly mine: boolean
}

/** A reaction as drawn: the first MAX_REACTION_CHARS characters (code points, so an emoji is never split). */
export const reactionLabel = (reaction: string): string => {
  const chars = [...reaction.trim()]
  return chars.length <= MAX_REACTION_CHARS ? chars.join("") : `${chars.slice(0, MAX_REACTION_CHARS).join("")}…`
}

interface Building {
  readonly reaction: string
  readonly nicks: Array<string>
  readonly folded: Set<string>
  mine: boolean
}

/** msgid → its reactions, from the loaded lines (oldest first); redacted reactions are taken back. */
export const reactions = (messages: ReadonlyArray<MessageRecord>): ReadonlyMap<string, ReadonlyArray<ReactionGroup>> => {
  const building = new Map<string, Map<string, Building>>()
  for (const m of messages) {
    if (m.kind !== "react" || m.redacted === true || m.replyTo === undefined) continue
    const reaction = m.text.trim()
    if (reaction === "") continue
    let groups = building.get(m.replyTo)
    if (groups === undefined) building.set(m.replyTo, (groups = new Map()))
    let group = groups.get(reaction)
    if (group === undefined) {
      if (groups.size >= MAX_REACTIONS_SHOWN) continue
      groups.set(reaction, (group = { reaction, nicks: [], folded: new Set(), mine: false }))
    }
    const who = m.nick ?? "?"
    if (!group.folded.has(fold(who))) {
      group.folded.add(fold(who))
      group.nicks.push(who)
    }
    if (m.self) group.mine = true
  }
  const out = new Map<string, ReadonlyArray<ReactionGroup>>()
  for (const [msgid, groups] of building) {
    out.set(msgid, [...groups.values()].map((g) => ({ reaction: g.reaction, count: g.nicks.length, nicks: g.nicks, mine: g.mine })))
  }
  return out
}

/** "carol, dave and you", "carol and 12 more": who gave a reaction, for its label. */
export const reactedBy = (group: ReactionGroup, ownNick: string | null): string => {
  const names = group.nicks.map((n) => ownNick !== null && fold(n) === fold(ownNick) ? "you" : n)
  const named = names.slice(0, MAX_NICKS_NAMED)
  const more = names.length - named.length
  if (more > 0) return `${named.join(", ")} and ${more} more`
  return named.length <= 1 ? named.join("") : `${named.slice(0, -1).join(", ")} and ${named[named.length - 1]}`
}

/** Whether two messages' reactions draw the same (a line is drawn again only when they differ). */
export const sameReactions = (a: ReadonlyArray<ReactionGroup> | undefined, b: ReadonlyArray<ReactionGroup> | undefined) => {
  if (a === b) return true
  if (a === undefined || b === undefined || a.length !== b.length) return false
  return a.every((g, i) => {
    const h = b[i]!
    return g.reaction === h.reaction && g.mine === h.mine && g.nicks.length === h.nicks.length && g.nicks.every((n, j) => n === h.nicks[j])
  })
}
