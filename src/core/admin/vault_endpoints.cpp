// /v1/vaults: vaults, their credentials and their services.
#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/admin/endpoints.hpp"
#include "vaultgate/admin/json_views.hpp"
#include "vaultgate/admin/request_body.hpp"
#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/config/service_binding.hpp"

namespace vaultgate::admin {

namespace {

using nlohmann::ordered_json;

AdminResponse list_vaults(const Catalog& catalog) {
    ordered_json vaults = ordered_json::array();
    for (const auto& vc : catalog.config().vaults) vaults.push_back(config_vault_json(vc, catalog));
    for (const auto& v : catalog.data().vaults) vaults.push_back(api_vault_json(v, catalog.master_key()));
    ordered_json body;
    body["vaults"] = std::move(vaults);
    return json_response(200, body);
}

AdminResponse get_vault(const Catalog& catalog, std::string_view id) {
    const auto ref = catalog.known_vault(id);
    return json_response(
        200, ref.api ? api_vault_json(*ref.api, catalog.master_key()) : config_vault_json(*ref.config, catalog));
}

AdminResponse create_vault(Catalog& catalog, const AdminRequest& req) {
    ParsedBody body(req.body);
    require_keys(body.root(), {"name"});
    const std::string name = required_string(body.root(), "name");
    check_name(name, "vault");
    const StoredVault vault = catalog.add_vault(name);
    ordered_json out;
    out["id"] = vault.id;
    out["name"] = vault.name;
    return json_response(201, out);
}

AdminResponse create_credential(Catalog& catalog, std::string_view vault_id, const AdminRequest& req) {
    const std::size_t index = catalog.writable_vault(vault_id);
    ParsedBody body(req.body);
    require_keys(body.root(), {"name", "value"});
    const std::string name = required_string(body.root(), "name");
    check_name(name, "credential");
    const std::string& value = required_string(body.root(), "value");
    check_value(value);
    catalog.add_credential(index, name, Secret(std::string(value)));  // the temporary is wiped by Secret
    ordered_json out;
    out["name"] = name;
    out["version"] = 1;
    return json_response(201, out);
}

AdminResponse rotate_credential(Catalog& catalog, std::string_view vault_id, std::string_view name,
                                const AdminRequest& req) {
    const std::size_t index = catalog.writable_vault(vault_id);
    const std::size_t ci = catalog.credential_index(index, name);
    ParsedBody body(req.body);
    require_keys(body.root(), {"value"});
    const std::string& value = required_string(body.root(), "value");
    check_value(value);
    const std::string credential_name = catalog.data().vaults[index].credentials[ci].name;
    const std::uint64_t version = catalog.rotate_credential(index, ci, Secret(std::string(value)));
    ordered_json out;
    out["name"] = credential_name;
    out["version"] = version;
    return json_response(200, out);
}

AdminResponse create_service(Catalog& catalog, std::string_view vault_id, const AdminRequest& req) {
    const std::size_t index = catalog.writable_vault(vault_id);
    ParsedBody body(req.body);
    std::string why;
    // The same rules as a config-file service; its messages never quote values.
    auto config = service_from_json(body.root(), &why);
    if (!config) fail(400, "invalid_service", why);
    if (auto refusal = check_service_binding(config->host, config->port, own_listeners(catalog.config())))
        fail(400, refusal->code, "host: " + refusal->message);
    const StoredService service = catalog.add_service(index, std::move(*config));
    return json_response(201, service_json(service.id, service.config));
}

}  // namespace

void add_vault_routes(Router& router, const EndpointContext* ctx) {
    router.add("GET", "/v1/vaults", [ctx](const RouteCall&) { return list_vaults(*ctx->catalog); });
    router.add("POST", "/v1/vaults", [ctx](const RouteCall& c) { return create_vault(*ctx->catalog, c.request); });
    router.add("GET", "/v1/vaults/*", [ctx](const RouteCall& c) { return get_vault(*ctx->catalog, c.params[0]); });
    router.add("DELETE", "/v1/vaults/*", [ctx](const RouteCall& c) {
        Catalog& catalog = *ctx->catalog;
        catalog.remove_vault(catalog.writable_vault(c.params[0]));
        return no_content();
    });
    router.add("POST", "/v1/vaults/*/credentials",
               [ctx](const RouteCall& c) { return create_credential(*ctx->catalog, c.params[0], c.request); });
    router.add("PUT", "/v1/vaults/*/credentials/*", [ctx](const RouteCall& c) {
        return rotate_credential(*ctx->catalog, c.params[0], c.params[1], c.request);
    });
    router.add("DELETE", "/v1/vaults/*/credentials/*", [ctx](const RouteCall& c) {
        Catalog& catalog = *ctx->catalog;
        catalog.remove_credential(catalog.writable_vault(c.params[0]), c.params[1]);
        return no_content();
    });
    router.add("POST", "/v1/vaults/*/services",
               [ctx](const RouteCall& c) { return create_service(*ctx->catalog, c.params[0], c.request); });
    router.add("DELETE", "/v1/vaults/*/services/*", [ctx](const RouteCall& c) {
        Catalog& catalog = *ctx->catalog;
        catalog.remove_service(catalog.writable_vault(c.params[0]), c.params[1]);
        return no_content();
    });
}

}  // namespace vaultgate::admin
