// Generates docs/errors.md from the error catalogue (src/errors/catalogue.ts).
import { writeFileSync } from 'node:fs';
import { ERRORS } from '../src/errors/index.ts';

export function renderErrorsDoc(): string {
  const rows = Object.entries(ERRORS).map(
    ([code, spec]) =>
      `| \`${code}\` | ${spec.status} | ${spec.message.replaceAll('|', '\\|')} | ${spec.doc.replaceAll('|', '\\|')} |`,
  );
  return `# Errors

Generated from \`src/errors/catalogue.ts\` by \`node scripts/gen-errors-doc.ts --write\`; \`npm run check\` fails when
this file and the catalogue disagree. Do not edit by hand.

Every REST and queue route answers errors with one JSON shape:

\`\`\`json
{ "code": "JOB_NOT_FOUND", "message": "Job 1234 not found", "details": [{ "field": "…", "message": "…" }] }
\`\`\`

\`code\` is stable (never reused or renamed); \`message\` is for people; \`details\` appears when there is more to say,
for example which field failed validation. GraphQL returns the same codes in \`errors[].extensions.code\`.

| code | HTTP | message | when |
|---|---|---|---|
${rows.join('\n')}
`;
}

if (process.argv.includes('--write')) {
  writeFileSync('docs/errors.md', renderErrorsDoc());
  process.stdout.write('wrote docs/errors.md\n');
}
