export declare const CODE_SERVER_VERSION: string;
export declare const installDir: string;
export declare const codeServerBin: string;
/** Installs code-server into .vscode-test/ unless already there; returns the binary's path. */
export declare function installCodeServer(options?: { quiet?: boolean }): string;
