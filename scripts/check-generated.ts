// Regenerates the generated artefacts (docs/errors.md, ...) and fails when the committed copy differs.
import { readFileSync } from 'node:fs';
import { renderErrorsDoc } from './gen-errors-doc.ts';

const problems: string[] = [];
const expected = renderErrorsDoc();
let actual = '';
try {
  actual = readFileSync('docs/errors.md', 'utf8');
} catch {
  // missing file is reported below
}
if (actual !== expected) problems.push('docs/errors.md is out of date: run `node scripts/gen-errors-doc.ts --write`');

if (problems.length > 0) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write('generated files are up to date\n');
