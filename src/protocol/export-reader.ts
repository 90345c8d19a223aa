/**
 * Reads a whole export_conversation file, piece by piece (docs/protocol.md, "export_conversation"), for
 * every client: the phone page, the chat webview and the editor's command. Types only: browser-safe.
 */
import type { CommandInputOf } from './commands';
import type { ExportFormat } from './conversations';
import type { EnvelopeOf } from './results';

export interface ExportedFile {
  file_name: string;
  mime_type: string;
  text: string;
}

type ExportRequest = (frame: CommandInputOf<'export_conversation'>) => Promise<EnvelopeOf<'export_conversation'>>;

/** The whole file; throws an Error with the service's message when a piece is refused. */
export async function readExport(request: ExportRequest, conversationId: string, format: ExportFormat): Promise<ExportedFile> {
  const pieces: string[] = [];
  let next: number | null = 0;
  let until: string | undefined;
  let file: Omit<ExportedFile, 'text'> | undefined;
  while (next !== null) {
    const answer = await request({ type: 'export_conversation', conversation_id: conversationId, format, ...(until === undefined ? {} : { offset: next, until }) });
    if (answer.status !== 'ok') throw new Error(answer.error || 'the export was refused');
    pieces.push(answer.data.text);
    file ??= { file_name: answer.data.file_name, mime_type: answer.data.mime_type };
    until = answer.data.until;
    next = answer.data.next_offset;
  }
  return { ...file!, text: pieces.join('') };
}
