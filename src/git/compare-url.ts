/**
 * The page that opens a pull request (GitHub), merge request (GitLab) or pull request (Bitbucket) for
 * `branch`, read from the remote's URL in any of its forms (`https://host/owner/repo(.git)`,
 * `git@host:owner/repo.git`, `ssh://git@host(:port)/owner/repo.git`); null for any other host. Built
 * from the host and the repository's path only, so credentials in the remote's URL never reach it.
 */
export function compareUrlOf(remoteUrl: string, branch: string, baseBranch: string | null): string | null {
  const location = hostAndPath(remoteUrl.trim());
  if (!location) return null;
  const repoPath = location.path.replace(/\.git$/, '').replace(/^\/+|(?<!\/)\/+$/g, '');
  if (!/^[^/]+\/[^/]+(\/[^/]+)*$/.test(repoPath)) return null;
  const source = encodeURIComponent(branch);
  switch (location.host.toLowerCase()) {
    case 'github.com':
      return `https://github.com/${repoPath}/compare/${baseBranch ? `${encodeURIComponent(baseBranch)}...` : ''}${source}?expand=1`;
    case 'gitlab.com':
      return `https://gitlab.com/${repoPath}/-/merge_requests/new?merge_request%5Bsource_branch%5D=${source}${baseBranch ? `&merge_request%5Btarget_branch%5D=${encodeURIComponent(baseBranch)}` : ''}`;
    case 'bitbucket.org':
      return `https://bitbucket.org/${repoPath}/pull-requests/new?source=${source}${baseBranch ? `&dest=${encodeURIComponent(baseBranch)}` : ''}&t=1`;
    default:
      return null;
  }
}

function hostAndPath(url: string): { host: string; path: string } | null {
  // scp-like: [user@]host:path (no scheme, no slash before the colon).
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/\/)(.+)$/.exec(url);
  if (scp && !url.includes('://')) return { host: scp[1], path: scp[2] };
  try {
    const parsed = new URL(url);
    if (!['https:', 'http:', 'ssh:', 'git:', 'git+ssh:', 'ssh+git:'].includes(parsed.protocol)) return null;
    return { host: parsed.hostname, path: decodeURIComponent(parsed.pathname) };
  } catch {
    return null;
  }
}
