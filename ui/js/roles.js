// What the signed-in key may do, from who the gateway says it is (GET /user/info's "caller"): which
// pages the navigation shows and which buttons a page offers. Hiding is not security (the server
// refuses anyway); a button is shown only for a call the server would take.

import { session } from "./api.js";

const ROLE_NAMES = {
  proxy_admin: "Proxy admin",
  proxy_admin_viewer: "Proxy admin viewer",
  internal_user: "Internal user",
  internal_user_viewer: "Internal user viewer",
};

export const USER_ROLES = [
  ["internal_user", "Internal user: its own keys and spend"],
  ["internal_user_viewer", "Internal user viewer: reads its own keys and spend"],
  ["proxy_admin_viewer", "Proxy admin viewer: reads everything"],
  ["proxy_admin", "Proxy admin: everything"],
];

export const roleName = (role) => ROLE_NAMES[role] || role || "–";

/** The caller's rights: {kind, role, userId, teamId, adminTeams, teams, readsAll, writesAll, ownKeys, ...}. */
export function rights(kind = session.role, caller = session.caller) {
  const c = caller || {};
  const role = kind === "master" ? "proxy_admin" : c.role || null;
  const adminTeams = kind === "user" ? c.admin_teams || [] : [];
  const userId = kind === "user" ? c.user_id || null : null;
  const readsAll = role === "proxy_admin" || role === "proxy_admin_viewer";
  const writesAll = role === "proxy_admin";
  const ownKeys = userId !== null && (role === "proxy_admin" || role === "internal_user");
  // Users and team members: a gateway that answered /user/info has them (an older one signs the master in by /key/list).
  const users = caller !== null && caller !== undefined;
  return {
    users,
    kind,
    role,
    userId,
    teamId: c.team_id || null,
    adminTeams,
    teams: c.teams || [], // the teams the user belongs to: {team_id, team_alias}
    readsAll,
    writesAll,
    ownKeys,
    /** The keys page: every key, the user's own keys, or its teams' keys. */
    keysPage: readsAll || userId !== null || adminTeams.length > 0,
    teamsPage: readsAll || adminTeams.length > 0,
    usersPage: readsAll && users,
    spendPage: readsAll || userId !== null || adminTeams.length > 0,
    /** Whether a key may be made at all (for itself, or in a team it administers). */
    makesKeys: writesAll || ownKeys || adminTeams.length > 0,
    /** Whether this key (a /key/list row) may be edited, blocked or deleted. */
    writesKey(key) {
      if (writesAll) return true;
      if (ownKeys && key.user_id === userId) return true;
      return Boolean(key.team_id) && adminTeams.includes(key.team_id);
    },
  };
}

/** The header's words for who is signed in. */
export function whoText(kind = session.role, caller = session.caller) {
  if (kind === "master") return "Master key";
  if (kind === "open") return "Open gateway";
  if (kind !== "user") return "Virtual key";
  const r = rights(kind, caller);
  const parts = [roleName(r.role)];
  if (r.adminTeams.length) parts.push(`team admin of ${r.adminTeams.join(", ")}`);
  return `${parts.join(" · ")} (${r.userId})`;
}
