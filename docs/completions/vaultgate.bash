# bash completion for vaultgate; `vaultgate completion bash` prints it.
_vaultgate() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" word words values i
    ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD - 1]}"
    # The subcommand path so far; option words and their values are skipped.
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        case "$path $word" in
            " serve") path="$path $word" ;;
            " check-config") path="$path $word" ;;
            " ca") path="$path $word" ;;
            " ca init") path="$path $word" ;;
            " vault") path="$path $word" ;;
            " vault create") path="$path $word" ;;
            " vault list") path="$path $word" ;;
            " vault show") path="$path $word" ;;
            " vault delete") path="$path $word" ;;
            " vault add-credential") path="$path $word" ;;
            " vault rotate") path="$path $word" ;;
            " vault remove-credential") path="$path $word" ;;
            " vault add-service") path="$path $word" ;;
            " vault remove-service") path="$path $word" ;;
            " session") path="$path $word" ;;
            " session create") path="$path $word" ;;
            " session list") path="$path $word" ;;
            " session show") path="$path $word" ;;
            " session delete") path="$path $word" ;;
            " logs") path="$path $word" ;;
            " bootstrap") path="$path $word" ;;
            " explain") path="$path $word" ;;
            " store") path="$path $word" ;;
            " store migrate") path="$path $word" ;;
            " version") path="$path $word" ;;
            " help") path="$path $word" ;;
            " completion") path="$path $word" ;;
            " completion bash") path="$path $word" ;;
        esac
    done
    case "$path" in
        "") words="serve check-config ca vault session logs bootstrap explain store version help completion --help -h --version"; values="--help -h --version" ;;
        " serve") words="--help -h --config --allow-rollback"; values="--help -h --config --allow-rollback" ;;
        " check-config") words="--help -h --config --no-bind-check"; values="--help -h --config --no-bind-check" ;;
        " ca") words="init --help -h"; values="--help -h" ;;
        " ca init") words="--help -h --out --name"; values="--help -h --out --name" ;;
        " vault") words="create list show delete add-credential rotate remove-credential add-service remove-service --help -h"; values="--help -h" ;;
        " vault create") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " vault list") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " vault show") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " vault delete") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " vault add-credential") words="--help -h --admin --token-file --config --output -o --json --value-file"; values="--help -h --admin --token-file --config --output -o --json --value-file" ;;
        " vault rotate") words="--help -h --admin --token-file --config --output -o --json --value-file"; values="--help -h --admin --token-file --config --output -o --json --value-file" ;;
        " vault remove-credential") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " vault add-service") words="--help -h --admin --token-file --config --output -o --json --host --port --path-prefix --auth --key --header --user --template --param --access-key-id --secret-access-key --session-token --region --service --token-url --client-id --client-secret --scope --audience --client-auth --app-id --installation-id --private-key --api-url --scheme --scopes --redact-response"; values="--help -h --admin --token-file --config --output -o --json --host --port --path-prefix --auth --key --header --user --template --param --access-key-id --secret-access-key --session-token --region --service --token-url --client-id --client-secret --scope --audience --client-auth --app-id --installation-id --private-key --api-url --scheme --scopes --redact-response" ;;
        " vault remove-service") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " session") words="create list show delete --help -h"; values="--help -h" ;;
        " session create") words="--help -h --admin --token-file --config --output -o --json --vault --ttl --policy --allow-domain --source"; values="--help -h --admin --token-file --config --output -o --json --vault --ttl --policy --allow-domain --source" ;;
        " session list") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " session show") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " session delete") words="--help -h --admin --token-file --config --output -o --json"; values="--help -h --admin --token-file --config --output -o --json" ;;
        " logs") words="--help -h --admin --token-file --config --output -o --json --vault --session --limit --follow"; values="--help -h --admin --token-file --config --output -o --json --vault --session --limit --follow" ;;
        " bootstrap") words="--help -h --admin --token-file --config --vault --format --secret --out-dir --ttl --cleanup"; values="--help -h --admin --token-file --config --vault --format --secret --out-dir --ttl --cleanup" ;;
        " explain") words="--help -h --session --method --admin --token-file --config --output -o --json"; values="--help -h --session --method --admin --token-file --config --output -o --json" ;;
        " store") words="migrate --help -h"; values="--help -h" ;;
        " store migrate") words="--help -h --from --to --master-key-file"; values="--help -h --from --to --master-key-file" ;;
        " version") words="--help -h"; values="--help -h" ;;
        " help") words="--help -h"; values="--help -h" ;;
        " completion") words="bash --help -h"; values="--help -h" ;;
        " completion bash") words="--help -h"; values="--help -h" ;;
        *) words=""; values="" ;;
    esac
    case " $values " in
        *" $prev "*)
            [[ -n "$prev" ]] && { COMPREPLY=($(compgen -f -- "$cur")); return 0; } ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _vaultgate vaultgate
