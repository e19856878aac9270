/**
 * The dashboard's only script and style, served from /admin/assets/ (the CSP allows nothing inline and
 * nothing from elsewhere). Kept as modules so the compiled package carries them.
 */
const CSS = `
:root { --fg: #1d2330; --muted: #5b6475; --line: #d8dce3; --bg: #f6f7f9; --accent: #2456c9; --bad: #b42318; --ok: #16794c; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, Segoe UI, Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.2rem; align-items: center; padding: .6rem 1.2rem; background: #fff; border-bottom: 1px solid var(--line); }
header .brand { font-weight: 700; }
header nav a { margin-right: .9rem; color: var(--accent); text-decoration: none; }
header .who { margin-left: auto; color: var(--muted); display: flex; gap: .6rem; align-items: center; }
main { padding: 1rem 1.2rem; max-width: 1400px; }
h1 { font-size: 1.3rem; margin: .2rem 0 1rem; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); }
td.mono, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; word-break: break-all; }
pre { background: #fff; border: 1px solid var(--line); padding: .7rem; overflow: auto; max-height: 32rem; white-space: pre-wrap; word-break: break-all; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: .7rem; }
.card { background: #fff; border: 1px solid var(--line); padding: .7rem; }
.card .n { font-size: 1.5rem; font-weight: 700; }
.card .l { color: var(--muted); }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: .8rem; }
.chart { background: #fff; border: 1px solid var(--line); padding: .5rem; }
.chart svg.plot { width: 100%; height: auto; display: block; }
.legend span { margin-right: .8rem; }
.status-failed, .bad { color: var(--bad); font-weight: 600; }
.status-processed, .ok { color: var(--ok); }
form.inline { display: inline; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-bottom: .8rem; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
input, select, textarea, button { font: inherit; padding: .3rem .45rem; }
button { background: var(--accent); color: #fff; border: 0; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); border: 1px solid var(--accent); }
.notice { background: #fff8e5; border: 1px solid #f0d48a; padding: .6rem; margin: .6rem 0; }
.error { background: #fdecea; border: 1px solid #f5b5ae; padding: .6rem; margin: .6rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; background: #fff; border: 1px solid var(--line); padding: .7rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.signin { max-width: 420px; margin: 4rem auto; background: #fff; border: 1px solid var(--line); padding: 1.2rem; }
.signin input { width: 100%; margin: .4rem 0 .8rem; }
`;

/** Asks before a form marked data-confirm is sent (replays and retries change things). */
const JS = `
document.addEventListener('submit', function (event) {
  var form = event.target;
  var question = form.getAttribute('data-confirm');
  if (question && !window.confirm(question)) event.preventDefault();
});
`;

export const ASSETS: Record<string, { type: string; body: string }> = {
  'admin.css': { type: 'text/css; charset=utf-8', body: CSS },
  'admin.js': { type: 'text/javascript; charset=utf-8', body: JS },
};
