// Loaded with --import into a process the bench measures: at exit, its peak resident set (getrusage's
// maxrss, in KiB) on stderr, where the bench reads it. Nothing else changes in that process.
import process from 'node:process';

process.on('exit', () => {
  process.stderr.write(`peak-rss-kib ${process.resourceUsage().maxRSS}\n`);
});
