// tests/browser/drive.mjs: page.mjs's steps, run by the server.mjs
// listening on the Unix socket DRIVE_SOCKET, whose playwright-core is
// loaded already. Prints what page.mjs would, and exits as it would.
//
// usage: DRIVE_SOCKET=PATH node drive.mjs PAGE.html STEP...
import { connect } from 'node:net';

const conn = connect(process.env.DRIVE_SOCKET);
let got = '', status = 1;
conn.setEncoding('utf8');
conn.on('connect', () => conn.write(JSON.stringify({ cwd: process.cwd(), argv: process.argv.slice(2) }) + '\n'));
conn.on('data', (d) => {
  got += d;
  let nl;
  while ((nl = got.indexOf('\n')) >= 0) {
    const line = got.slice(0, nl);
    got = got.slice(nl + 1);
    if (line.startsWith('o ')) process.stdout.write(line.slice(2) + '\n');
    else if (line.startsWith('e ')) process.stderr.write(line.slice(2) + '\n');
    else if (line.startsWith('x ')) status = Number(line.slice(2));
  }
});
conn.on('error', (e) => {
  process.stderr.write(`drive.mjs: ${process.env.DRIVE_SOCKET}: ${e.message}\n`);
  process.exit(1);
});
conn.on('close', () => process.exit(status));
