// The dashboard's built files (ui/, built by Vite), compiled into baton by
// cmake/embed_ui.cmake: the generated ui_assets.cc defines these two functions.
#pragma once

#include <span>
#include <string_view>

namespace baton::api {

struct UiAsset {
  std::string_view path;          // under /ui/: "index.html", "assets/index-3f2a.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view data;          // the file
  std::string_view gzip;          // the file gzipped (-9)
  std::string_view etag;          // a quoted strong ETag: the SHA-256 of the file, shortened
};

// Every file of the dashboard; none when baton was built without it.
std::span<const UiAsset> UiAssets();
// Why there is no dashboard ("" when there is one): said at /ui.
std::string_view UiMissing();

}  // namespace baton::api
