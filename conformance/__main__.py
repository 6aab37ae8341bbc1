from conformance.cli import main

main()
