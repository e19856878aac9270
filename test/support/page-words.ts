/** Text a person reads on a page: without what is data (class "mono", pre) and without markup. */
export function wordsShown(page: string): string {
  return page
    .replace(/<(span|td|strong|a|pre)[^>]*class="[^"]*mono[^"]*"[^>]*>[\s\S]*?<\/\1>/g, '')
    .replace(/<pre[^>]*>[\s\S]*?<\/pre>/g, '')
    .replace(/<[^>]+>/g, ' ');
}

/** The codes among a page's words: snake_case, the way the inbox names states, kinds, actions and columns. */
export function codesShown(page: string): string[] {
  return wordsShown(page).match(/\b[a-z]+(?:_[a-z]+)+\b/g) ?? [];
}
