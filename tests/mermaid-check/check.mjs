// Reads Mermaid source on stdin and parses it with Mermaid's own parser:
// prints the diagram type and exits 0, or prints the parse error and exits 1.
// Mermaid's module expects a browser's globals; jsdom provides them.
import { readFileSync } from 'node:fs';
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import('mermaid');

const source = readFileSync(0, 'utf8');
try {
  const parsed = await mermaid.parse(source);
  console.log(parsed.diagramType);
} catch (error) {
  console.error(String(error?.message ?? error));
  process.exit(1);
}
