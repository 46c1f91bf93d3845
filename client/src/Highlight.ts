// Highlight: whether a line names the member's nick as a word, ignoring case, exactly as the server decides it for
// Web Push and the unread counts (CLIENT-PROTOCOL: highlights). Pure.

const NICK_CHARS = "A-Za-z0-9_\\-\\[\\]\\\\`^{|}"
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

export const mentions = (text: string, nick: string | null): boolean =>
  nick !== null && nick !== "" &&
  new RegExp(`(^|[^${NICK_CHARS}])${escapeRegExp(nick)}($|[^${NICK_CHARS}])`, "i").test(text)
