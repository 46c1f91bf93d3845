// SearchFilters: the search box's filters, as chat clients write them — `in:#channel` (or `in:nick` for a private
// conversation) narrows to one buffer, `from:nick` to one speaker; everything else is the words to find, quoted
// phrases kept whole. The result is search_messages' arguments (the interface: query, target, nick). A filter given
// twice takes the last; a filter with nothing after the colon is a word. Pure; docs/decisions/web.md "Search filters".

export interface ParsedSearch {
  /** The words to find, as typed (quotes kept: the server reads web-search syntax). */
  readonly query: string
  readonly target: string | null
  readonly nick: string | null
}

/** Words and quoted phrases, split at spaces outside quotes (an unclosed quote runs to the end). */
const tokens = (input: string): ReadonlyArray<string> => {
  const out: Array<string> = []
  let current = ""
  let quoted = false
  for (const c of input) {
    if (c === "\"") quoted = !quoted
    if (!quoted && /\s/.test(c)) {
      if (current !== "") out.push(current)
      current = ""
    } else current += c
  }
  if (current !== "") out.push(current)
  return out
}

const unquote = (s: string) => s.replace(/^"(.*)"?$/, "$1").replace(/"$/, "")

export const parseSearch = (input: string): ParsedSearch => {
  let target: string | null = null
  let nick: string | null = null
  const words: Array<string> = []
  for (const token of tokens(input)) {
    const filter = /^(in|from):(.+)$/i.exec(token)
    const value = filter === null ? "" : unquote(filter[2]!).trim()
    if (filter === null || value === "") {
      words.push(token)
      continue
    }
    if (filter[1]!.toLowerCase() === "in") target = value
    else nick = value.replace(/^@/, "")
  }
  return { query: words.join(" "), target, nick }
}

/** search_messages' arguments for what was typed (and the network chosen beside it), or why it cannot be sent. */
export const searchArguments = (
  input: string,
  networkId: number | null,
  limit: number
): { readonly ok: true; readonly args: Readonly<Record<string, unknown>> } | { readonly ok: false; readonly error: string } => {
  const parsed = parseSearch(input)
  if (parsed.query === "") {
    return { ok: false, error: parsed.target === null && parsed.nick === null ? "Type something to search for." : "Add a word to search for besides the filters." }
  }
  return {
    ok: true,
    args: {
      query: parsed.query,
      ...(networkId === null ? {} : { networkId }),
      ...(parsed.target === null ? {} : { target: parsed.target }),
      ...(parsed.nick === null ? {} : { nick: parsed.nick }),
      limit
    }
  }
}
