#!/usr/bin/env node
// Entry point for `npx wharf`: Node 24 (pinned by the project) runs the TypeScript sources directly.
import '../src/cli/main.ts';
