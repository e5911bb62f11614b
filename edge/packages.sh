#!/usr/bin/env bash
# Installs the Debian packages the edge runs on, with apt-get, when a file of theirs is missing:
#
#   nginx (the binary), libnginx-mod-http-lua (ngx_http_lua_module + ndk_http_module, LuaJIT),
#   lua-nginx-redis (lua-resty-redis as /usr/share/lua/5.1/nginx/redis.lua; it depends on
#   nginx-extras, which brings more dynamic modules that only /etc/nginx/modules-enabled loads),
#   lua-resty-core, lua-resty-lrucache and lua-cjson.
#
# Nothing is downloaded from anywhere else. Needs root or sudo and a Debian package mirror.
# Prints the nginx binary's path on success (the callers run that one).
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# One file per package, the one the edge loads.
declare -A NEEDED=(
  [/usr/sbin/nginx]=nginx
  [/usr/lib/nginx/modules/ndk_http_module.so]=libnginx-mod-http-ndk
  [/usr/lib/nginx/modules/ngx_http_lua_module.so]=libnginx-mod-http-lua
  [/usr/share/lua/5.1/nginx/redis.lua]=lua-nginx-redis
  [/usr/share/lua/5.1/resty/core.lua]=lua-resty-core
  [/usr/share/lua/5.1/resty/lrucache.lua]=lua-resty-lrucache
)
missing=()
for file in "${!NEEDED[@]}"; do [ -e "$file" ] || missing+=("${NEEDED[$file]}"); done
# lua-cjson's library sits in the architecture's folder (/usr/lib/x86_64-linux-gnu/lua/5.1/cjson.so).
compgen -G '/usr/lib/*/lua/5.1/cjson.so' >/dev/null || missing+=(lua-cjson)

if [ ${#missing[@]} -gt 0 ]; then
  echo "edge: installing ${missing[*]} from Debian packages" >&2
  as_root apt-get update -qq || { echo "edge: apt-get update failed (needs root or sudo and a Debian mirror)" >&2; exit 1; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
    || { echo "edge: apt-get install ${missing[*]} failed" >&2; exit 1; }
fi
echo /usr/sbin/nginx
