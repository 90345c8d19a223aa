import * as vscode from 'vscode';
import type { AuditEntry } from '../protocol';
import { AUDIT_KIND_LABEL, auditFacts, auditPersonLabel, auditPlaceIsPerson, auditPlaceLabel, auditSummaryText, auditVerdictText } from '../protocol/audit-labels';
import { call } from './backend';
import type { Requester } from './connection-info';

/** Entries asked for at a time; "Load older…" asks for the next page. */
export const ACTIVITY_PAGE = 100;

export type ActivityItem = vscode.QuickPickItem & { entry?: AuditEntry; older?: true };

const KIND_ICON: Partial<Record<AuditEntry['kind'], string>> = {
  'permission.answer': 'shield',
  'rule.added': 'add',
  'rule.removed': 'remove',
  'mode.changed': 'settings',
  'config.changed': 'settings-gear',
  'device.paired': 'device-mobile',
  'device.revoked': 'circle-slash',
  login: 'sign-in',
  'login.failed_burst': 'warning',
  'turn.undone': 'discard',
  backup: 'archive',
  restore: 'history',
  'webhook.tool_run': 'plug',
};

/** One entry as a row: what (with its kind's icon), who and from where, then kind, exact time, number and facts. */
export function activityItem(entry: AuditEntry): ActivityItem {
  const facts = auditFacts(entry.detail)
    .map(([name, text]) => `${name}: ${text}`)
    .join(' · ');
  return {
    label: `$(${KIND_ICON[entry.kind] ?? 'circle-small'}) ${auditSummaryText(entry)}`,
    description: auditPlaceIsPerson(entry) ? auditPersonLabel(entry.person) : `${auditPersonLabel(entry.person)} · ${auditPlaceLabel(entry.place)}`,
    detail: [AUDIT_KIND_LABEL[entry.kind] ?? entry.kind, new Date(entry.at).toLocaleString(), `#${entry.seq}`, facts].filter(Boolean).join(' · '),
    entry,
  };
}

/** The first row: what verify_audit found, a warning when the chain is broken. */
export function verdictItem(verdict: Parameters<typeof auditVerdictText>[0]): ActivityItem {
  return { label: `$(${verdict.ok ? 'verified' : 'warning'}) ${auditVerdictText(verdict)}`, alwaysShow: true };
}

const OLDER: ActivityItem = { label: '$(history) Load older…', alwaysShow: true, older: true };

/**
 * "Remote Assistant: Show Activity": the audit log (owner only), newest first, in a quick pick whose
 * first row says whether the record's hash chain holds (verify_audit). Typing filters the rows by what,
 * who, where and kind; "Load older…" pages back (list_audit `before`).
 */
export async function showActivity(backend: Requester | undefined, pageSize = ACTIVITY_PAGE): Promise<void> {
  if (!backend) throw new Error('the service is not running in any window');
  const [verdict, first] = await Promise.all([call(backend, { type: 'verify_audit' }), call(backend, { type: 'list_audit', limit: pageSize })]);
  const entries = [...first.entries];
  let nextBefore = first.next_before;
  const pick = vscode.window.createQuickPick<ActivityItem>();
  pick.title = 'Remote Assistant: Activity';
  pick.placeholder = entries.length === 0 ? 'Nothing recorded yet' : 'Type to filter by what, who, where or kind';
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  /** Setting the rows moves the focus to the first: after a page of older ones, it goes to the first of them. */
  const render = (focusSeq?: number) => {
    pick.items = [verdictItem(verdict), { label: '', kind: vscode.QuickPickItemKind.Separator }, ...entries.map(activityItem), ...(nextBefore !== null ? [OLDER] : [])];
    const focus = pick.items.find((item) => item.entry !== undefined && item.entry.seq === focusSeq);
    if (focus) pick.activeItems = [focus];
  };
  render();
  return new Promise((resolve) => {
    pick.onDidAccept(() => {
      if (!pick.selectedItems[0]?.older || nextBefore === null) return;
      pick.busy = true;
      void call(backend, { type: 'list_audit', limit: pageSize, before: nextBefore })
        .then((page) => {
          entries.push(...page.entries);
          nextBefore = page.next_before;
          render(page.entries[0]?.seq);
        })
        .catch((error: Error) => void vscode.window.showErrorMessage(`Remote Assistant: ${error.message}`))
        .finally(() => (pick.busy = false));
    });
    pick.onDidHide(() => {
      pick.dispose();
      resolve();
    });
    pick.show();
  });
}
